// The pipeline: a board with a column per stage whose cards are dragged from stage to stage, a
// list with filters, and what is due today. Everything here is free: the cards show the leads as
// stored when they were added.
import { useEffect, useState } from "react";
import { ApiFailure, call, type Schemas, th } from "../api.ts";
import {
  Card,
  DataTable,
  Empty,
  Field,
  Link,
  Loading,
  Page,
  Problem,
  useLoad,
} from "../components.tsx";
import { formatDate, formatMoney } from "../logic.ts";
import {
  EMPTY_PIPELINE_FILTERS,
  exportQuery,
  isDue,
  type PipelineFilters,
  pipelineQuery,
  STALE_CHANGE,
  utcToday,
} from "../pipeline-logic.ts";
import type { Session } from "../session.ts";
import { PipelineItemPage } from "./pipeline-item.tsx";
import "./pipeline.css";

type Stage = Schemas["PipelineStage"];
type Item = Schemas["PipelineItemSummary"];

const VIEWS = [
  { to: "/pipeline", label: "Board" },
  { to: "/pipeline/list", label: "List" },
  { to: "/pipeline/due", label: "Due today" },
];

function itemHref(id: string): string {
  return `/pipeline/item?id=${encodeURIComponent(id)}`;
}

function loadStages(): Promise<Stage[]> {
  return call(th.GET("/v1/pipeline/stages")).then((answer) => answer.data);
}

/** The pipeline's pages, by path: the board, the list, what is due and one item. */
export function PipelinePage(props: { path: string; session: Session }) {
  if (props.path === "/pipeline/item") {
    return <PipelineItemPage memberId={props.session.member.id} />;
  }
  const view = VIEWS.find((each) => each.to === props.path) ?? VIEWS[0];
  return (
    <Page
      title="Pipeline"
      lead="Work the parcels you added, from first look to closed deal. Moving, notes, tags and follow-ups are free; adding a parcel is a lead read."
    >
      <nav aria-label="Pipeline views" className="tabs">
        {VIEWS.map((each) => (
          <Link key={each.to} to={each.to} current={each.to === view?.to}>
            {each.label}
          </Link>
        ))}
      </nav>
      {props.path === "/pipeline/list" ? (
        <PipelineList memberId={props.session.member.id} />
      ) : props.path === "/pipeline/due" ? (
        <DueToday />
      ) : (
        <Board />
      )}
    </Page>
  );
}

function PipelineCard(props: {
  item: Item;
  stages: Stage[];
  onMove: (item: Item, stageId: string) => void;
}) {
  const { item } = props;
  const today = utcToday();
  return (
    <article
      className="pipeline-card"
      draggable
      data-testid="pipeline-card"
      data-folio={item.folio}
      onDragStart={(event) => {
        event.dataTransfer.setData("text/plain", item.id);
        event.dataTransfer.effectAllowed = "move";
      }}
    >
      <Link to={itemHref(item.id)}>{item.lead.address}</Link>
      <p className="muted small">
        {item.folio} · {item.lead.owner_name}
      </p>
      <p className="small">
        {formatMoney(item.lead.just_value)}
        {item.follow_up_on ? (
          <span className={isDue(item.follow_up_on, today) ? "due" : "muted"}>
            {" "}
            · follow up {formatDate(item.follow_up_on)}
          </span>
        ) : null}
      </p>
      {item.tags.length > 0 ? (
        <p className="chips">
          {item.tags.map((tag) => (
            <span key={tag} className="chip">
              {tag}
            </span>
          ))}
        </p>
      ) : null}
      <label className="visually-hidden" htmlFor={`move-${item.id}`}>
        Move {item.folio} to stage
      </label>
      <select
        id={`move-${item.id}`}
        className="small"
        value={item.stage_id}
        onChange={(event) => props.onMove(item, event.target.value)}
      >
        {props.stages
          .filter((stage) => !stage.retired || stage.id === item.stage_id)
          .map((stage) => (
            <option key={stage.id} value={stage.id}>
              {stage.name}
            </option>
          ))}
      </select>
    </article>
  );
}

/** Each stage's first 50 cards, newest change first. */
async function loadBoard() {
  const stages = await loadStages();
  const columns = await Promise.all(
    stages.map((stage) =>
      call(th.GET("/v1/pipeline/items", { params: { query: { stage_id: stage.id, limit: 50 } } })),
    ),
  );
  const cards = new Map(stages.map((stage, index) => [stage.id, columns[index]?.data ?? []]));
  // A retired stage is shown only while it still holds cards.
  return { stages: stages.filter((stage) => !stage.retired || cards.get(stage.id)?.length), cards };
}

function Board() {
  const board = useLoad(loadBoard);
  const [cards, setCards] = useState<Map<string, Item[]>>(new Map());
  const [error, setError] = useState<unknown>(null);
  const [over, setOver] = useState<string | null>(null);
  useEffect(() => {
    if (board.data) {
      setCards(board.data.cards);
    }
  }, [board.data]);
  if (!board.data) {
    return board.error ? <Problem error={board.error} /> : <Loading />;
  }
  const stages = board.data.stages;

  /** Moves the card on the board at once, then asks the API; a refusal puts the board back. */
  async function move(item: Item, stageId: string) {
    if (stageId === item.stage_id) {
      return;
    }
    setError(null);
    setCards((current) => placed(current, { ...item, stage_id: stageId }, item.stage_id));
    try {
      const moved = await call(
        th.POST("/v1/pipeline/items/{item_id}/move", {
          params: { path: { item_id: item.id } },
          body: { stage_id: stageId, version: item.version },
        }),
      );
      setCards((current) => placed(current, moved, stageId));
    } catch (failure) {
      const stale = failure instanceof ApiFailure && failure.code === "conflict";
      setError(stale ? new Error(STALE_CHANGE) : failure);
      await board.reload();
    }
  }

  return (
    <>
      <Problem error={error} />
      <div className="board" data-testid="pipeline-board">
        {stages.map((stage) => {
          const column = cards.get(stage.id) ?? [];
          return (
            <section
              key={stage.id}
              className={`board-column${over === stage.id ? " over" : ""}`}
              aria-label={stage.name}
              data-testid="pipeline-column"
              data-stage={stage.name}
              onDragOver={(event) => {
                if (!stage.retired) {
                  event.preventDefault();
                  setOver(stage.id);
                }
              }}
              onDragLeave={() => setOver(null)}
              onDrop={(event) => {
                event.preventDefault();
                setOver(null);
                const id = event.dataTransfer.getData("text/plain");
                const item = [...cards.values()].flat().find((each) => each.id === id);
                if (item) {
                  void move(item, stage.id);
                }
              }}
            >
              <h2>
                {stage.name}
                {stage.retired ? " (retired)" : ""} <span className="muted">{column.length}</span>
              </h2>
              {column.length === 0 ? <p className="muted small">Drop a card here</p> : null}
              {column.map((item) => (
                <PipelineCard key={item.id} item={item} stages={stages} onMove={move} />
              ))}
            </section>
          );
        })}
      </div>
    </>
  );
}

/** The board with `item` in `stageId`'s column (first) and out of `from`'s. */
function placed(board: Map<string, Item[]>, item: Item, from: string): Map<string, Item[]> {
  const next = new Map(board);
  next.set(
    from,
    (next.get(from) ?? []).filter((each) => each.id !== item.id),
  );
  next.set(item.stage_id, [
    item,
    ...(next.get(item.stage_id) ?? []).filter((each) => each.id !== item.id),
  ]);
  return next;
}

function ItemsTable(props: { items: Item[]; stages: Stage[] }) {
  const names = new Map(props.stages.map((stage) => [stage.id, stage.name]));
  return (
    <DataTable columns={["Parcel", "Owner", "Stage", "Tags", "Follow-up", "Notes", "Value"]}>
      {props.items.map((item) => (
        <tr key={item.id} data-testid="pipeline-row">
          <td>
            <Link to={itemHref(item.id)}>{item.lead.address}</Link>
            <div className="muted small">{item.folio}</div>
          </td>
          <td>{item.lead.owner_name}</td>
          <td>{names.get(item.stage_id) ?? "—"}</td>
          <td>{item.tags.join(", ") || "—"}</td>
          <td>{formatDate(item.follow_up_on)}</td>
          <td>{item.notes_count}</td>
          <td>{formatMoney(item.lead.just_value)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

type ItemPage = { data: Item[]; next_cursor: string | null };

function PipelineList(props: { memberId: string }) {
  const stages = useLoad(loadStages);
  const [filters, setFilters] = useState<PipelineFilters>(EMPTY_PIPELINE_FILTERS);
  const [applied, setApplied] = useState<PipelineFilters>(EMPTY_PIPELINE_FILTERS);
  const [page, setPage] = useState<ItemPage | null>(null);
  const [error, setError] = useState<unknown>(null);

  async function load(using: PipelineFilters, cursor?: string) {
    setError(null);
    try {
      const query = pipelineQuery(using, props.memberId, cursor ? { cursor } : {});
      const next = await call(th.GET("/v1/pipeline/items", { params: { query } }));
      setPage(cursor && page ? { ...next, data: [...page.data, ...next.data] } : next);
      setApplied(using);
    } catch (failure) {
      setError(failure);
    }
  }
  // biome-ignore lint/correctness/useExhaustiveDependencies: the first page once, on arrival
  useEffect(() => {
    void load(EMPTY_PIPELINE_FILTERS);
  }, []);
  const set = (name: keyof PipelineFilters, value: string) =>
    setFilters({ ...filters, [name]: value });

  return (
    <>
      <Card title="Filters">
        <form
          className="filters"
          onSubmit={(event) => {
            event.preventDefault();
            void load(filters);
          }}
        >
          <Field label="Stage">
            {(id) => (
              <select
                id={id}
                value={filters.stage_id}
                onChange={(e) => set("stage_id", e.target.value)}
              >
                <option value="">Any</option>
                {(stages.data ?? []).map((stage) => (
                  <option key={stage.id} value={stage.id}>
                    {stage.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Assignee">
            {(id) => (
              <select
                id={id}
                value={filters.assignee}
                onChange={(e) => set("assignee", e.target.value)}
              >
                <option value="">Anyone</option>
                <option value="me">Me</option>
                <option value="none">Unassigned</option>
              </select>
            )}
          </Field>
          <Field label="Tag">
            {(id) => (
              <input id={id} value={filters.tag} onChange={(e) => set("tag", e.target.value)} />
            )}
          </Field>
          <Field label="Follow-up due by">
            {(id) => (
              <input
                id={id}
                type="date"
                value={filters.follow_up_due}
                onChange={(e) => set("follow_up_due", e.target.value)}
              />
            )}
          </Field>
          <Field label="Search">
            {(id) => (
              <input
                id={id}
                placeholder="Folio, address or owner"
                value={filters.q}
                onChange={(e) => set("q", e.target.value)}
              />
            )}
          </Field>
          <Field label="Sort">
            {(id) => (
              <select id={id} value={filters.sort} onChange={(e) => set("sort", e.target.value)}>
                <option value="-updated_at">Recently changed</option>
                <option value="-added_at">Recently added</option>
                <option value="follow_up_on">Next follow-up</option>
              </select>
            )}
          </Field>
          <div className="form-actions">
            <button type="submit" className="button primary">
              Apply
            </button>
            <a
              className="button"
              href={`/v1/pipeline/export.csv${exportQuery(applied, props.memberId)}`}
              download="pipeline.csv"
            >
              Export CSV (free)
            </a>
          </div>
        </form>
      </Card>
      <Problem error={error ?? stages.error} />
      {!page ? (
        <Loading />
      ) : page.data.length === 0 ? (
        <Empty>No item matches these filters.</Empty>
      ) : (
        <Card title={`Items (${page.data.length}${page.next_cursor ? "+" : ""})`}>
          <ItemsTable items={page.data} stages={stages.data ?? []} />
          {page.next_cursor ? (
            <button
              type="button"
              className="button"
              onClick={() => void load(applied, page.next_cursor ?? undefined)}
            >
              Load more
            </button>
          ) : null}
        </Card>
      )}
    </>
  );
}

function DueToday() {
  const today = utcToday();
  const due = useLoad(async () => {
    const [stages, items] = await Promise.all([
      loadStages(),
      call(
        th.GET("/v1/pipeline/items", {
          params: { query: { follow_up_due: today, sort: "follow_up_on", limit: 200 } },
        }),
      ),
    ]);
    return { stages, items: items.data };
  }, today);
  if (!due.data) {
    return due.error ? <Problem error={due.error} /> : <Loading />;
  }
  return (
    <Card title={`Due today, ${formatDate(today)} (UTC), and overdue`}>
      {due.data.items.length === 0 ? (
        <Empty>Nothing to follow up today.</Empty>
      ) : (
        <ItemsTable items={due.data.items} stages={due.data.stages} />
      )}
      <p className="muted small">Oldest follow-up first.</p>
    </Card>
  );
}
