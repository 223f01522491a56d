import { useState } from "react";
import { ApiFailure, call, type Schemas, th } from "../api.ts";
import {
  Card,
  DataTable,
  Empty,
  Loading,
  Page,
  Problem,
  SecretOnce,
  TextField,
  useAttempt,
  useLoad,
} from "../components.tsx";
import { formatAge, formatDate, rotationReminder } from "../logic.ts";
import type { Session } from "../session.ts";

// The key page works for an admin of every tier: it calls the dashboard's own key operations
// (`/v1/dashboard/api-keys`), which answer signed-in sessions only, not the management API,
// which stays the Team and Custom tiers' programmatic surface.

type ApiKey = Schemas["ApiKey"];
type Attempt = (work: () => Promise<void>) => Promise<void>;

/** A secret to show once, with what it is. */
interface ShownSecret {
  title: string;
  secret: string;
}

/** Whether the key list was refused for the role (or the tier), which hides the whole page. */
export function keysGated(error: unknown): boolean {
  return (
    error instanceof ApiFailure && (error.code === "tier_required" || error.code === "forbidden")
  );
}

/** What a row says of a rotation under way: the key replacing this one, or the one this replaces. */
function rotationNote(key: ApiKey, keys: readonly ApiKey[]): string | null {
  const lastFourOf = (id: string | null) => keys.find((each) => each.id === id)?.last4 ?? "????";
  if (key.replaced_by_key_id && !key.revoked) {
    return `Being replaced by th_live_…${lastFourOf(key.replaced_by_key_id)}. Once the new key is deployed, revoke this one (step 2 of 2).`;
  }
  if (key.replaces_key_id && !key.revoked) {
    return `Replaces th_live_…${lastFourOf(key.replaces_key_id)}.`;
  }
  return null;
}

/** Issues a labelled key and shows its secret once. */
function IssueKeyCard(props: { attempt: Attempt; show: (secret: ShownSecret) => void }) {
  const [label, setLabel] = useState("");
  return (
    <Card title="Issue a key">
      <form
        className="inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          await props.attempt(async () => {
            const issued = await call(th.POST("/v1/dashboard/api-keys", { body: { label } }));
            props.show({ title: `Your new key “${issued.label}”.`, secret: issued.secret });
            setLabel("");
          });
        }}
      >
        <TextField
          label="Label"
          hint="Where the key will live, e.g. “CRM sync”."
          required
          maxLength={100}
          value={label}
          onChange={(event) => setLabel(event.target.value)}
        />
        <button type="submit" className="button primary">
          Issue key
        </button>
      </form>
    </Card>
  );
}

/** One key: whose it is, its age, reminder and rotation state, and what can be done with it. */
export function KeyRow(props: {
  apiKey: ApiKey;
  keys?: readonly ApiKey[];
  session: Session;
  onRevoke: () => void;
  onRotate?: () => void;
}) {
  const key = props.apiKey;
  const note = rotationNote(key, props.keys ?? [key]);
  const reminder = key.replaced_by_key_id ? null : rotationReminder(key);
  return (
    <tr data-testid={`key-${key.id}`}>
      <td>
        {key.label}
        {key.member_id === props.session.member.id ? (
          <span className="muted small"> (yours)</span>
        ) : null}
        {key.member_removed ? (
          <span className="muted small"> (issued by a removed member)</span>
        ) : null}
        {reminder ? (
          <p className="reminder" role="note">
            {reminder}
          </p>
        ) : null}
        {note ? <p className="muted small">{note}</p> : null}
      </td>
      <td>
        <code>th_live_…{key.last4}</code>
      </td>
      <td>{formatDate(key.created_at)}</td>
      <td>{formatAge(key.age_days)}</td>
      <td>
        <span className={key.revoked ? "pill off" : "pill on"}>
          {key.revoked ? "Revoked" : "Active"}
        </span>
      </td>
      <td className="actions">
        {key.revoked ? null : (
          <>
            {key.replaced_by_key_id || !props.onRotate ? null : (
              <button
                type="button"
                className="button"
                aria-label={`Rotate ${key.label} (…${key.last4})`}
                onClick={props.onRotate}
              >
                Rotate
              </button>
            )}
            <button
              type="button"
              className="button danger"
              aria-label={`Revoke ${key.label} (…${key.last4})`}
              onClick={props.onRevoke}
            >
              Revoke
            </button>
          </>
        )}
      </td>
    </tr>
  );
}

/** Suspected compromise: every key revoked, every webhook secret rotated, one fresh key. */
function CompromiseCard(props: { attempt: Attempt; show: (secret: ShownSecret) => void }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <Card title="Suspect a key has leaked?">
      <p className="muted">
        Revokes every active key of the account at once, rotates every webhook signing secret, and
        issues you one fresh key. Every integration stops until it has the new key.
      </p>
      <button
        type="button"
        className="button danger"
        onClick={async () => {
          if (!window.confirm("Revoke every key and rotate every webhook secret now?")) {
            return;
          }
          await props.attempt(async () => {
            const answer = await call(th.POST("/v1/dashboard/security/compromise"));
            setDone(
              `${answer.revoked_key_ids.length} key(s) revoked; webhook signing secrets are being rotated.`,
            );
            props.show({
              title: `The fresh key “${answer.api_key.label}”.`,
              secret: answer.api_key.secret,
            });
          });
        }}
      >
        Revoke every key and rotate webhook secrets
      </button>
      {done ? (
        <p className="notice" role="status">
          {done}
        </p>
      ) : null}
    </Card>
  );
}

export function KeysPage(props: { session: Session }) {
  const keys = useLoad(() => call(th.GET("/v1/dashboard/api-keys")));
  const { error, attempt } = useAttempt();
  const [shown, setShown] = useState<ShownSecret | null>(null);
  const act: Attempt = async (work) =>
    attempt(async () => {
      await work();
      await keys.reload();
    });

  async function revoke(key: ApiKey) {
    if (!window.confirm(`Revoke “${key.label}”? Requests with it fail at once.`)) {
      return;
    }
    await act(async () => {
      await call(
        th.DELETE("/v1/dashboard/api-keys/{key_id}", { params: { path: { key_id: key.id } } }),
      );
    });
  }

  async function rotate(key: ApiKey) {
    await act(async () => {
      const issued = await call(
        th.POST("/v1/dashboard/api-keys/{key_id}:rotate", {
          params: { path: { key_id: key.id } },
        }),
      );
      setShown({
        title: `Step 1 of 2: the new key replacing “${key.label}” (…${key.last4}). Deploy it, then revoke the old key.`,
        secret: issued.secret,
      });
    });
  }

  const list = keys.data?.data;
  return (
    <Page
      title="API keys"
      lead="Keys authenticate REST and MCP calls as Authorization: Bearer <key>. Every key of the account shares one rate limit and one lead-view quota. Rotating is two steps: issue the replacement, deploy it, then revoke the old key."
    >
      {keysGated(keys.error) ? (
        <Problem error={keys.error} />
      ) : (
        <>
          <IssueKeyCard attempt={act} show={setShown} />
          <Problem error={error} />
          {shown ? (
            <SecretOnce title={shown.title} secret={shown.secret} onDone={() => setShown(null)} />
          ) : null}
          <Card title="Keys">
            <Problem error={keys.error} />
            {!list ? (
              <Loading />
            ) : list.length === 0 ? (
              <Empty>No keys yet.</Empty>
            ) : (
              <DataTable columns={["Label", "Key", "Issued", "Age", "Status"]} actions>
                {list.map((key) => (
                  <KeyRow
                    key={key.id}
                    apiKey={key}
                    keys={list}
                    session={props.session}
                    onRevoke={() => void revoke(key)}
                    onRotate={() => void rotate(key)}
                  />
                ))}
              </DataTable>
            )}
          </Card>
          <CompromiseCard attempt={act} show={setShown} />
        </>
      )}
    </Page>
  );
}
