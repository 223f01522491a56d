import { useState } from "react";
import { call, type Schemas, th } from "../api.ts";
import {
  Card,
  CopyButton,
  DataTable,
  Field,
  Loading,
  Page,
  Problem,
  TextField,
  useAttempt,
  useLoad,
} from "../components.tsx";
import { formatDate } from "../logic.ts";
import type { Session } from "../session.ts";
import {
  passwordLinkTitle,
  passwordLinkUrl,
  passwordLinkValidity,
  seatsLead,
} from "../team-logic.ts";

type Member = Schemas["Member"];

interface PasswordLink {
  email: string;
  url: string;
  purpose: string;
}

type Attempt = (work: () => Promise<void>) => Promise<void>;

/** A one-time password link, shown once for the admin to send privately. */
export function PasswordLinkNotice({ link }: { link: PasswordLink }) {
  return (
    <div className="notice secret" role="status">
      <p>
        <strong>
          {passwordLinkTitle(link.purpose)} for {link.email}.
        </strong>{" "}
        Send it to them privately; it works once
        {passwordLinkValidity(link.purpose)}.
      </p>
      <div className="secret-row">
        <code className="secret-value">{link.url}</code>
        <CopyButton text={link.url} />
      </div>
    </div>
  );
}

/** Adds a member by email and role, then shows their invitation link. */
function InviteCard(props: {
  attempt: Attempt;
  error: unknown;
  link: PasswordLink | null;
  issueLink: (member: Member) => Promise<void>;
  reload: () => Promise<void>;
}) {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<"member" | "admin">("member");
  return (
    <Card title="Invite a member">
      <form
        className="inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          await props.attempt(async () => {
            const added = await call(th.POST("/v1/team/members", { body: { email, role } }));
            await props.issueLink(added);
            setEmail("");
            await props.reload();
          });
        }}
      >
        <TextField
          label="Email"
          type="email"
          required
          value={email}
          onChange={(event) => setEmail(event.target.value)}
        />
        <Field label="Role">
          {(id) => (
            <select
              id={id}
              value={role}
              onChange={(event) => setRole(event.target.value as "member" | "admin")}
            >
              <option value="member">Member</option>
              <option value="admin">Admin</option>
            </select>
          )}
        </Field>
        <button type="submit" className="button primary">
          Invite
        </button>
      </form>
      <Problem error={props.error} />
      {props.link ? <PasswordLinkNotice link={props.link} /> : null}
    </Card>
  );
}

/** Confirms removing a member, with revoking the keys they issued as a separate choice. */
export function RemoveMemberCard(props: {
  member: Member;
  revokeKeys: boolean;
  setRevokeKeys: (revoke: boolean) => void;
  attempt: Attempt;
  onRemoved: () => Promise<void>;
  onCancel: () => void;
}) {
  const { member, revokeKeys } = props;
  return (
    <Card title={`Remove ${member.email}`}>
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          await props.attempt(async () => {
            await call(
              th.DELETE("/v1/team/members/{member_id}", {
                params: {
                  path: { member_id: member.id },
                  query: { revoke_keys: revokeKeys ? "true" : "false" },
                },
              }),
            );
            await props.onRemoved();
          });
        }}
      >
        <p>
          They lose access to the dashboard at once. The API keys they issued belong to the account,
          not to them, and keep working unless you revoke them.
        </p>
        <label className="checkbox">
          <input
            type="checkbox"
            checked={revokeKeys}
            onChange={(event) => props.setRevokeKeys(event.target.checked)}
          />{" "}
          Also revoke the API keys {member.email} issued
        </label>
        <div className="inline-form">
          <button type="submit" className="button danger">
            Remove member
          </button>
          <button type="button" className="button" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </Card>
  );
}

/** One member's row; admins get a password link for anyone and removal for anyone else. */
export function MemberRow(props: {
  member: Member;
  session: Session;
  onLink: (member: Member) => void;
  onRemove: (member: Member) => void;
}) {
  const { member, session } = props;
  const isSelf = member.id === session.member.id;
  return (
    <tr>
      <td>
        {member.email}
        {isSelf ? <span className="muted small"> (you)</span> : null}
      </td>
      <td>{member.role === "admin" ? "Admin" : "Member"}</td>
      <td>{formatDate(member.created_at)}</td>
      <td className="actions">
        {session.member.role === "admin" ? (
          <>
            <button type="button" className="button" onClick={() => props.onLink(member)}>
              Password link
            </button>
            {!isSelf ? (
              <button
                type="button"
                className="button danger"
                onClick={() => props.onRemove(member)}
              >
                Remove
              </button>
            ) : null}
          </>
        ) : null}
      </td>
    </tr>
  );
}

export function TeamPage(props: { session: Session }) {
  const members = useLoad(() => call(th.GET("/v1/team/members")));
  const account = useLoad(() => call(th.GET("/v1/account")));
  const [link, setLink] = useState<PasswordLink | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [revokeKeys, setRevokeKeys] = useState(false);
  const { error, setError, attempt } = useAttempt();
  const isAdmin = props.session.member.role === "admin";

  async function linkFor(member: { id: string; email: string }) {
    const token = await call(
      th.POST("/v1/team/members/{member_id}/password-token", {
        params: { path: { member_id: member.id } },
      }),
    );
    setLink({
      email: member.email,
      purpose: token.purpose,
      url: passwordLinkUrl(window.location.origin, token.token),
    });
  }

  return (
    <Page title="Team" lead={seatsLead(account.data?.seats, members.data?.data.length)}>
      {members.error ? (
        <Problem error={members.error} />
      ) : (
        <>
          {isAdmin ? (
            <InviteCard
              attempt={attempt}
              error={error}
              link={link}
              issueLink={linkFor}
              reload={members.reload}
            />
          ) : null}
          {removing ? (
            <RemoveMemberCard
              member={removing}
              revokeKeys={revokeKeys}
              setRevokeKeys={setRevokeKeys}
              attempt={attempt}
              onRemoved={async () => {
                setRemoving(null);
                await members.reload();
              }}
              onCancel={() => setRemoving(null)}
            />
          ) : null}
          <Card title="Members">
            {!members.data ? (
              <Loading />
            ) : (
              <DataTable columns={["Email", "Role", "Since"]} actions>
                {members.data.data.map((member) => (
                  <MemberRow
                    key={member.id}
                    member={member}
                    session={props.session}
                    onLink={(chosen) => void linkFor(chosen).catch(setError)}
                    onRemove={(chosen) => {
                      setRevokeKeys(false);
                      setRemoving(chosen);
                    }}
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
