import { useState } from "react";
import { api } from "../api.ts";
import {
  Card,
  DataTable,
  Empty,
  Field,
  Loading,
  Page,
  Problem,
  SecretOnce,
  TextField,
  useAttempt,
  useLoad,
} from "../components.tsx";
import { formatDateTime } from "../logic.ts";
import type { Watchlist } from "./watchlists.tsx";

interface Endpoint {
  id: string;
  watchlist_id: string;
  url: string;
  events: string[];
  created_at: string;
}

interface Delivery {
  id: string;
  folio: string;
  state: string;
  parked_reason: string | null;
  attempts: number;
  replay_no: number;
  last_status_code: number | null;
  last_failure: string | null;
  dead_letter_reason: string | null;
  created_at: string;
  last_attempted_at: string | null;
}

interface Attempt {
  replay_no: number;
  attempt: number;
  attempted_at: string;
  duration_ms: number | null;
  status_code: number | null;
  failure: string | null;
  state: string;
}

const VIEWS = [
  { state: "", label: "All deliveries" },
  { state: "dead_letter", label: "Dead letters" },
  { state: "parked", label: "Parked" },
] as const;

function Attempts(props: { base: string; delivery: Delivery }) {
  const detail = useLoad(
    () => api<{ attempts: Attempt[] }>("GET", `${props.base}/deliveries/${props.delivery.id}`),
    props.delivery.id,
  );
  if (!detail.data) {
    return <Loading />;
  }
  return (
    <table className="table compact">
      <thead>
        <tr>
          <th scope="col">Attempt</th>
          <th scope="col">At</th>
          <th scope="col">Status</th>
          <th scope="col">Latency</th>
          <th scope="col">Failure</th>
        </tr>
      </thead>
      <tbody>
        {detail.data.attempts.map((attempt) => (
          <tr key={`${attempt.replay_no}-${attempt.attempt}`}>
            <td>
              {attempt.replay_no > 0 ? `replay ${attempt.replay_no}, ` : ""}#{attempt.attempt}
            </td>
            <td>{formatDateTime(attempt.attempted_at)}</td>
            <td>{attempt.status_code ?? "—"}</td>
            <td>{attempt.duration_ms === null ? "—" : `${attempt.duration_ms} ms`}</td>
            <td>{attempt.failure ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The delivery log's path for a view ("" for every state), newest 50 first. */
export function deliveriesPath(base: string, view: string): string {
  return `${base}/deliveries?limit=50${view ? `&state=${view}` : ""}`;
}

/** What a bulk replay says it did; the count is shown when the API gives one. */
export function bulkReplayNote(replayed: number | undefined): string {
  return `Replay requested${replayed !== undefined ? ` for ${replayed} deliveries` : ""}.`;
}

type Act = (work: () => Promise<string>) => Promise<void>;

function ViewTabs(props: { view: string; setView: (view: string) => void }) {
  return (
    <fieldset className="tabs">
      <legend className="visually-hidden">Delivery log view</legend>
      {VIEWS.map((each) => (
        <button
          key={each.state}
          type="button"
          className="button"
          aria-pressed={props.view === each.state}
          onClick={() => props.setView(each.state)}
        >
          {each.label}
        </button>
      ))}
    </fieldset>
  );
}

/** Replays every dead letter since a UTC time (a day ago unless changed). */
function BulkReplayForm(props: {
  base: string;
  since: string;
  setSince: (since: string) => void;
  act: Act;
}) {
  return (
    <form
      className="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        void props.act(async () => {
          const answer = await api<{ replayed?: number }>(
            "POST",
            `${props.base}/deliveries:replay`,
            { since: new Date(`${props.since}:00Z`).toISOString() },
          );
          return bulkReplayNote(answer?.replayed);
        });
      }}
    >
      <TextField
        label="Replay every dead letter since (UTC)"
        type="datetime-local"
        value={props.since}
        onChange={(event) => props.setSince(event.target.value)}
      />
      <button type="submit" className="button primary">
        Bulk replay
      </button>
    </form>
  );
}

/** One delivery: its state and last attempt, its attempts on demand, a replay if dead. */
export function DeliveryRow(props: {
  base: string;
  delivery: Delivery;
  open: boolean;
  toggle: () => void;
  act: Act;
}) {
  const { base, delivery } = props;
  return (
    <>
      <tr data-testid="delivery-row">
        <td>
          <code>{delivery.id}</code>
        </td>
        <td>{delivery.folio}</td>
        <td>
          <span className={`pill state-${delivery.state}`}>{delivery.state.replace("_", " ")}</span>
          {delivery.parked_reason ? <p className="muted small">{delivery.parked_reason}</p> : null}
          {delivery.dead_letter_reason ? (
            <p className="muted small">{delivery.dead_letter_reason}</p>
          ) : null}
        </td>
        <td>{delivery.attempts}</td>
        <td>
          {delivery.last_status_code ?? delivery.last_failure ?? "—"} ·{" "}
          {formatDateTime(delivery.last_attempted_at)}
        </td>
        <td className="actions">
          <button
            type="button"
            className="button"
            aria-expanded={props.open}
            onClick={props.toggle}
          >
            Attempts
          </button>
          {delivery.state === "dead_letter" ? (
            <button
              type="button"
              className="button primary"
              onClick={() =>
                void props.act(async () => {
                  await api("POST", `${base}/deliveries/${delivery.id}:replay`, {});
                  return `Delivery ${delivery.id} queued for replay.`;
                })
              }
            >
              Replay
            </button>
          ) : null}
        </td>
      </tr>
      {props.open ? (
        <tr>
          <td colSpan={6}>
            <Attempts base={base} delivery={delivery} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

function Deliveries(props: { watchlistId: string; endpoint: Endpoint }) {
  const base = `/v1/watchlists/${props.watchlistId}/webhooks/${props.endpoint.id}`;
  const [view, setView] = useState<string>("");
  const [open, setOpen] = useState<string | null>(null);
  const [since, setSince] = useState(() =>
    new Date(Date.now() - 86_400_000).toISOString().slice(0, 16),
  );
  const [note, setNote] = useState<string | null>(null);
  const { error, attempt } = useAttempt();
  const list = useLoad(
    () => api<{ data: Delivery[] }>("GET", deliveriesPath(base, view)),
    `${base}|${view}`,
  );
  async function act(work: () => Promise<string>) {
    await attempt(async () => {
      setNote(null);
      setNote(await work());
      await list.reload();
    });
  }
  return (
    <div className="stack">
      <ViewTabs view={view} setView={setView} />
      {view === "dead_letter" ? (
        <BulkReplayForm base={base} since={since} setSince={setSince} act={act} />
      ) : null}
      {note ? (
        <p className="notice" role="status">
          {note}
        </p>
      ) : null}
      <Problem error={error ?? list.error} />
      {!list.data ? (
        <Loading />
      ) : list.data.data.length === 0 ? (
        <Empty>Nothing here.</Empty>
      ) : (
        <DataTable columns={["Delivery", "Folio", "State", "Attempts", "Last"]} actions>
          {list.data.data.map((delivery) => (
            <DeliveryRow
              key={delivery.id}
              base={base}
              delivery={delivery}
              open={open === delivery.id}
              toggle={() => setOpen(open === delivery.id ? null : delivery.id)}
              act={act}
            />
          ))}
        </DataTable>
      )}
    </div>
  );
}

function Endpoints(props: { watchlist: Watchlist }) {
  const base = `/v1/watchlists/${props.watchlist.id}/webhooks`;
  const endpoints = useLoad(() => api<{ data: Endpoint[] }>("GET", base), base);
  const [url, setUrl] = useState("");
  const [secret, setSecret] = useState<{ title: string; secret: string } | null>(null);
  const { error, attempt } = useAttempt();
  const [open, setOpen] = useState<string | null>(null);
  if (endpoints.error) {
    return <Problem error={endpoints.error} />;
  }
  return (
    <div className="stack">
      <Card title="Subscribe an endpoint">
        <form
          className="inline-form"
          onSubmit={async (event) => {
            event.preventDefault();
            await attempt(async () => {
              const created = await api<Endpoint & { secret: string }>("POST", base, {
                url,
                events: ["watchlist.match"],
              });
              setSecret({ title: `Signing secret for ${created.url}.`, secret: created.secret });
              setUrl("");
              await endpoints.reload();
            });
          }}
        >
          <TextField
            label="Endpoint URL"
            hint="HTTPS; receives a signed POST per match."
            type="url"
            required
            placeholder="https://example.com/hooks/terminal-house"
            value={url}
            onChange={(event) => setUrl(event.target.value)}
          />
          <button type="submit" className="button primary">
            Subscribe
          </button>
        </form>
        <Problem error={error} />
        {secret ? (
          <SecretOnce title={secret.title} secret={secret.secret} onDone={() => setSecret(null)} />
        ) : null}
      </Card>
      {!endpoints.data ? (
        <Loading />
      ) : endpoints.data.data.length === 0 ? (
        <Empty>No endpoints for this watchlist yet.</Empty>
      ) : (
        endpoints.data.data.map((endpoint) => (
          <Card
            key={endpoint.id}
            title={endpoint.url}
            actions={
              <div className="form-actions">
                <button
                  type="button"
                  className="button"
                  onClick={async () => {
                    await attempt(async () => {
                      const rotated = await api<{
                        secret: string;
                        previous_secret_expires_at: string;
                      }>("POST", `${base}/${endpoint.id}:rotate`, {});
                      setSecret({
                        title: `New signing secret for ${endpoint.url}; the old one also signs until ${formatDateTime(rotated.previous_secret_expires_at)}.`,
                        secret: rotated.secret,
                      });
                    });
                  }}
                >
                  Rotate secret
                </button>
                <button
                  type="button"
                  className="button"
                  aria-expanded={open === endpoint.id}
                  onClick={() => setOpen(open === endpoint.id ? null : endpoint.id)}
                >
                  Delivery log
                </button>
              </div>
            }
          >
            <p className="muted small">
              <code>{endpoint.id}</code> · {endpoint.events.join(", ")} · since{" "}
              {formatDateTime(endpoint.created_at)}
            </p>
            {open === endpoint.id ? (
              <Deliveries watchlistId={props.watchlist.id} endpoint={endpoint} />
            ) : null}
          </Card>
        ))
      )}
    </div>
  );
}

export function WebhooksPage() {
  const list = useLoad(() => api<{ data: Watchlist[] }>("GET", "/v1/watchlists?limit=100"));
  const [selected, setSelected] = useState<string>("");
  const watchlist = list.data?.data.find((each) => each.id === selected) ?? list.data?.data[0];
  return (
    <Page
      title="Webhooks"
      lead="Each watchlist delivers its matches to the endpoints subscribed to it, signed with the endpoint's secret. Failed deliveries retry, then wait as dead letters for 30 days for a replay."
    >
      <Problem error={list.error} />
      {!list.data ? (
        <Loading />
      ) : list.data.data.length === 0 ? (
        <Empty>Create a watchlist first: webhooks deliver its matches.</Empty>
      ) : (
        <>
          <Card>
            <Field label="Watchlist">
              {(id) => (
                <select
                  id={id}
                  value={watchlist?.id ?? ""}
                  onChange={(event) => setSelected(event.target.value)}
                >
                  {list.data?.data.map((each) => (
                    <option key={each.id} value={each.id}>
                      {each.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          </Card>
          {watchlist ? <Endpoints key={watchlist.id} watchlist={watchlist} /> : null}
        </>
      )}
    </Page>
  );
}
