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

type ApiKey = Schemas["ApiKey"];
type IssuedKey = Schemas["IssuedApiKey"];
type Attempt = (work: () => Promise<void>) => Promise<void>;

/** Whether the key list was refused for the tier or the role, which hides the whole page. */
export function keysGated(error: unknown): boolean {
  return (
    error instanceof ApiFailure && (error.code === "tier_required" || error.code === "forbidden")
  );
}

/** Issues a labelled key and shows its secret once. */
function IssueKeyCard(props: { attempt: Attempt; error: unknown; reload: () => Promise<void> }) {
  const [label, setLabel] = useState("");
  const [issued, setIssued] = useState<IssuedKey | null>(null);
  return (
    <Card title="Issue a key">
      <form
        className="inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          await props.attempt(async () => {
            setIssued(await call(th.POST("/v1/team/api-keys", { body: { label } })));
            setLabel("");
            await props.reload();
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
      <Problem error={props.error} />
      {issued ? (
        <SecretOnce
          title={`Your new key “${issued.label}”.`}
          secret={issued.secret}
          onDone={() => setIssued(null)}
        />
      ) : null}
    </Card>
  );
}

/** One key: whose it is, its age and rotation reminder, its status, and a revoke button. */
export function KeyRow(props: { apiKey: ApiKey; session: Session; onRevoke: () => void }) {
  const key = props.apiKey;
  const reminder = rotationReminder(key);
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
          <button
            type="button"
            className="button danger"
            aria-label={`Revoke ${key.label} (…${key.last4})`}
            onClick={props.onRevoke}
          >
            Revoke
          </button>
        )}
      </td>
    </tr>
  );
}

export function KeysPage(props: { session: Session }) {
  const keys = useLoad(() => call(th.GET("/v1/team/api-keys")));
  const { error, attempt } = useAttempt();

  async function revoke(key: ApiKey) {
    if (!window.confirm(`Revoke “${key.label}”? Requests with it fail at once.`)) {
      return;
    }
    await attempt(async () => {
      await call(th.DELETE("/v1/team/api-keys/{key_id}", { params: { path: { key_id: key.id } } }));
      await keys.reload();
    });
  }

  return (
    <Page
      title="API keys"
      lead="Keys authenticate REST and MCP calls as Authorization: Bearer <key>. Every key of the account shares one rate limit and one lead-view quota."
    >
      {keysGated(keys.error) ? (
        <Problem error={keys.error} />
      ) : (
        <>
          <IssueKeyCard attempt={attempt} error={error} reload={keys.reload} />
          <Card title="Keys">
            <Problem error={keys.error} />
            {!keys.data ? (
              <Loading />
            ) : keys.data.data.length === 0 ? (
              <Empty>No keys yet.</Empty>
            ) : (
              <DataTable columns={["Label", "Key", "Issued", "Age", "Status"]} actions>
                {keys.data.data.map((key) => (
                  <KeyRow
                    key={key.id}
                    apiKey={key}
                    session={props.session}
                    onRevoke={() => void revoke(key)}
                  />
                ))}
              </DataTable>
            )}
          </Card>
        </>
      )}
    </Page>
  );
}
