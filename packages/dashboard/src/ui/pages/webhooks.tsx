import { useState } from "react";
import { call, type Schemas, th } from "../api.ts";
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

type Endpoint = Schemas["WebhookEndpoint"];
/** What a row of the delivery log shows of a delivery. */
type Delivery = Pick<
  Schemas["WebhookDelivery"],
  | "id"
  | "folio"
  | "state"
  | "parked_reason"
  | "attempts"
  | "last_status_code"
  | "last_failure"
  | "dead_letter_reason"
  | "last_attempted_at"
>;
type DeliveryState = Schemas["WebhookDelivery"]["state"];

/** Where an endpoint's calls go: its watchlist and its id. */
interface EndpointPath {
  id: string;
  endpoint_id: string;
}

const VIEWS: readonly { state: DeliveryState | ""; label: string }[] = [
  { state: "", label: "All deliveries" },
  { state: "dead_letter", label: "Dead letters" },
  { state: "parked", label: "Parked" },
];

function Attempts(props: { endpoint: EndpointPath; delivery: Delivery }) {
  const detail = useLoad(
    () =>
      call(
        th.GET("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries/{delivery_id}", {
          params: { path: { ...props.endpoint, delivery_id: props.delivery.id } },
        }),
      ),
    props.delivery.id,
  );
  if (!detail.data) {
    return <Loading />;
  }
  return (
    <>
      <AttemptsTable attempts={detail.data.attempts} />
      <Payload
        path={{ ...props.endpoint, delivery_id: props.delivery.id }}
        paid={detail.data.body}
      />
    </>
  );
}

/** The payload as sent, indented when it is JSON. */
function indented(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * A delivery's payload, which holds the lead's address, owner and values: shown as the log
 * answers it when the delivery was charged, otherwise revealed on demand as a lead read (one
 * lead-view, none again for the parcel the same UTC day).
 */
export function Payload(props: {
  path: EndpointPath & { delivery_id: string };
  paid: string | null;
}) {
  const [body, setBody] = useState<string | null>(props.paid);
  const { error, attempt } = useAttempt();
  if (body !== null) {
    return <pre className="code">{indented(body)}</pre>;
  }
  return (
    <div className="stack">
      <button
        type="button"
        className="button"
        onClick={() =>
          void attempt(async () => {
            const shown = await call(
              th.GET("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries/{delivery_id}/body", {
                params: { path: props.path },
              }),
            );
            setBody(shown.body);
          })
        }
      >
        Show payload · 1 lead-view
      </button>
      <Problem error={error} />
    </div>
  );
}

function AttemptsTable(props: { attempts: Schemas["WebhookAttempt"][] }) {
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
        {props.attempts.map((attempt) => (
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

/** The delivery log's query for a view ("" for every state), newest 50 first. */
export function deliveriesQuery(view: DeliveryState | ""): {
  limit: number;
  state?: DeliveryState;
} {
  return view ? { limit: 50, state: view } : { limit: 50 };
}

/** What a bulk replay says it did; the count is shown when the API gives one. */
export function bulkReplayNote(replayed: number | undefined): string {
  return `Replay requested${replayed !== undefined ? ` for ${replayed} deliveries` : ""}.`;
}

type Act = (work: () => Promise<string>) => Promise<void>;

function ViewTabs(props: {
  view: DeliveryState | "";
  setView: (view: DeliveryState | "") => void;
}) {
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
  endpoint: EndpointPath;
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
          const answer = await call(
            th.POST("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries:replay", {
              params: { path: props.endpoint },
              body: { since: new Date(`${props.since}:00Z`).toISOString() },
            }),
          );
          return bulkReplayNote(answer.replayed);
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
  endpoint: EndpointPath;
  delivery: Delivery;
  open: boolean;
  toggle: () => void;
  act: Act;
}) {
  const { endpoint, delivery } = props;
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
                  await call(
                    th.POST(
                      "/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries/{delivery_id}:replay",
                      { params: { path: { ...endpoint, delivery_id: delivery.id } } },
                    ),
                  );
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
            <Attempts endpoint={endpoint} delivery={delivery} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

function Deliveries(props: { watchlistId: string; endpoint: Endpoint }) {
  const endpoint = { id: props.watchlistId, endpoint_id: props.endpoint.id };
  const [view, setView] = useState<DeliveryState | "">("");
  const [open, setOpen] = useState<string | null>(null);
  const [since, setSince] = useState(() =>
    new Date(Date.now() - 86_400_000).toISOString().slice(0, 16),
  );
  const [note, setNote] = useState<string | null>(null);
  const { error, attempt } = useAttempt();
  const list = useLoad(
    () =>
      call(
        th.GET("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries", {
          params: { path: endpoint, query: deliveriesQuery(view) },
        }),
      ),
    `${endpoint.id}|${endpoint.endpoint_id}|${view}`,
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
        <BulkReplayForm endpoint={endpoint} since={since} setSince={setSince} act={act} />
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
              endpoint={endpoint}
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
  const path = { id: props.watchlist.id };
  const endpoints = useLoad(
    () => call(th.GET("/v1/watchlists/{id}/webhooks", { params: { path } })),
    path.id,
  );
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
              const created = await call(
                th.POST("/v1/watchlists/{id}/webhooks", {
                  params: { path },
                  body: { url, events: ["watchlist.match"] },
                }),
              );
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
                      const rotated = await call(
                        th.POST("/v1/watchlists/{id}/webhooks/{endpoint_id}:rotate", {
                          params: { path: { ...path, endpoint_id: endpoint.id } },
                        }),
                      );
                      setSecret({
                        title: `New signing secret for ${endpoint.url}; the old one stopped signing at ${formatDateTime(rotated.previous_secret_expires_at)}, so your receiver should accept both until it holds this one.`,
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
  const list = useLoad(() => call(th.GET("/v1/watchlists", { params: { query: { limit: 100 } } })));
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
