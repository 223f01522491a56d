// One pipeline item: its stage, assignee, tags and follow-up, its notes, its history (every
// change, who and when) and the lead as read when it was added. Every change is sent with the
// version the page read; a stale one reloads the item and says so.
import { useState } from "react";
import { ApiFailure, call, type Schemas, th } from "../api.ts";
import { Card, Empty, Field, Loading, navigate, Page, Problem, useLoad } from "../components.tsx";
import { formatDate, formatDateTime, humanize } from "../logic.ts";
import { parseTags, STALE_CHANGE } from "../pipeline-logic.ts";
import { LeadRecord } from "./leads.tsx";

type Item = Schemas["PipelineItem"];
type Stage = Schemas["PipelineStage"];
type Event = Schemas["PipelineEvent"];

function itemId(): string {
  return new URLSearchParams(window.location.search).get("id") ?? "";
}

async function loadItem(id: string) {
  const path = { item_id: id };
  const [item, stages, history] = await Promise.all([
    call(th.GET("/v1/pipeline/items/{item_id}", { params: { path } })),
    call(th.GET("/v1/pipeline/stages")).then((answer) => answer.data),
    call(
      th.GET("/v1/pipeline/items/{item_id}/history", { params: { path, query: { limit: 200 } } }),
    ),
  ]);
  return { item, stages, history: history.data };
}

/** What one event of the history says, in words. */
function describe(event: Event, stages: Stage[]): string {
  const name = (id: string | null) => stages.find((stage) => stage.id === id)?.name ?? "a stage";
  switch (event.type) {
    case "added":
      return `added it to ${name(event.stage_id)}`;
    case "moved":
      return `moved it from ${name(event.from_stage_id)} to ${name(event.stage_id)}`;
    case "assigned":
      return event.assignee_id ? `assigned it to ${event.assignee_id}` : "unassigned it";
    case "tagged":
      return `set the tags to ${event.tags?.join(", ") || "none"}`;
    case "follow_up_set":
      return event.follow_up_on
        ? `set the follow-up to ${formatDate(event.follow_up_on)}`
        : "cleared the follow-up";
    case "noted":
      return "added a note";
    default:
      return humanize(event.type);
  }
}

export function PipelineItemPage(props: { memberId: string }) {
  const id = itemId();
  const loaded = useLoad(() => loadItem(id), id);
  const [error, setError] = useState<unknown>(null);
  if (!loaded.data) {
    return (
      <Page title="Pipeline item">
        {loaded.error ? <Problem error={loaded.error} /> : <Loading />}
      </Page>
    );
  }
  const { item, stages, history } = loaded.data;

  /** Sends a change at the version shown; a stale one reloads the item and says so. */
  async function change(work: (version: number) => Promise<unknown>) {
    setError(null);
    try {
      await work(item.version);
    } catch (failure) {
      const stale = failure instanceof ApiFailure && failure.code === "conflict";
      setError(stale ? new Error(STALE_CHANGE) : failure);
    }
    await loaded.reload();
  }
  const path = { item_id: item.id };
  const update = (body: Omit<Schemas["PipelineItemUpdate"], "version">) =>
    change((version) =>
      call(
        th.PATCH("/v1/pipeline/items/{item_id}", { params: { path }, body: { ...body, version } }),
      ),
    );

  return (
    <Page title={item.lead.address} lead={`${item.folio} · ${item.lead.owner_name}`}>
      <Problem error={error} />
      <ItemFacts
        item={item}
        stages={stages}
        update={update}
        change={change}
        memberId={props.memberId}
      />
      <Notes item={item} update={update} />
      <Card title="History">
        <ol className="history" data-testid="pipeline-history">
          {history.map((event) => (
            <li key={event.id}>
              <span className="muted small">{formatDateTime(event.occurred_at)}</span>{" "}
              <strong>{event.member_id === props.memberId ? "You" : event.member_id}</strong>{" "}
              {describe(event, stages)}
            </li>
          ))}
        </ol>
      </Card>
      <Card title="The lead as read when added">
        <LeadRecord lead={item.snapshot} />
      </Card>
      <button
        type="button"
        className="button danger"
        onClick={() =>
          void change(async (version) => {
            await call(
              th.DELETE("/v1/pipeline/items/{item_id}", { params: { path, query: { version } } }),
            );
            navigate("/pipeline");
          })
        }
      >
        Remove from pipeline
      </button>
    </Page>
  );
}

type Update = (body: Omit<Schemas["PipelineItemUpdate"], "version">) => Promise<void>;

function ItemFacts(props: {
  item: Item;
  stages: Stage[];
  update: Update;
  change: (work: (version: number) => Promise<unknown>) => Promise<void>;
  memberId: string;
}) {
  const { item, stages } = props;
  const [tags, setTags] = useState(item.tags.join(", "));
  const [followUp, setFollowUp] = useState(item.follow_up_on ?? "");
  return (
    <Card title="Where it stands">
      <div className="filters">
        <Field label="Stage">
          {(id) => (
            <select
              id={id}
              value={item.stage_id}
              onChange={(event) =>
                void props.change((version) =>
                  call(
                    th.POST("/v1/pipeline/items/{item_id}/move", {
                      params: { path: { item_id: item.id } },
                      body: { stage_id: event.target.value, version },
                    }),
                  ),
                )
              }
            >
              {stages
                .filter((stage) => !stage.retired || stage.id === item.stage_id)
                .map((stage) => (
                  <option key={stage.id} value={stage.id}>
                    {stage.name}
                  </option>
                ))}
            </select>
          )}
        </Field>
        <Field label="Next follow-up (UTC day)">
          {(id) => (
            <input
              id={id}
              type="date"
              value={followUp}
              onChange={(e) => setFollowUp(e.target.value)}
            />
          )}
        </Field>
        <Field label="Tags" hint="Comma-separated">
          {(id) => <input id={id} value={tags} onChange={(e) => setTags(e.target.value)} />}
        </Field>
      </div>
      <p className="muted small">
        Assigned to {item.assignee_id === props.memberId ? "you" : (item.assignee_id ?? "nobody")} ·
        added {formatDateTime(item.added_at)} by {item.added_by} · version {item.version}
      </p>
      <div className="form-actions">
        <button
          type="button"
          className="button primary"
          onClick={() =>
            void props.update({ tags: parseTags(tags), follow_up_on: followUp || null })
          }
        >
          Save follow-up and tags
        </button>
        <button
          type="button"
          className="button"
          onClick={() =>
            void props.update({
              assignee_id: item.assignee_id === props.memberId ? null : props.memberId,
            })
          }
        >
          {item.assignee_id === props.memberId ? "Unassign me" : "Assign to me"}
        </button>
      </div>
    </Card>
  );
}

function Notes(props: { item: Item; update: Update }) {
  const [text, setText] = useState("");
  return (
    <Card title={`Notes (${props.item.notes.length})`}>
      {props.item.notes.length === 0 ? <Empty>No notes yet.</Empty> : null}
      <ul className="notes" data-testid="pipeline-notes">
        {props.item.notes.map((note) => (
          <li key={note.id}>
            <p>{note.text}</p>
            <p className="muted small">
              {note.author_id} · {formatDateTime(note.created_at)}
            </p>
          </li>
        ))}
      </ul>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (text.trim()) {
            void props.update({ note: text }).then(() => setText(""));
          }
        }}
      >
        <Field label="New note">
          {(id) => (
            <textarea id={id} rows={3} value={text} onChange={(e) => setText(e.target.value)} />
          )}
        </Field>
        <button type="submit" className="button">
          Add note
        </button>
      </form>
    </Card>
  );
}
