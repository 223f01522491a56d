import { useState } from "react";
import { api } from "../api.ts";
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
import type { Tenant } from "./overview.tsx";

interface Member {
  id: string;
  email: string;
  role: "admin" | "member";
  created_at: string;
}

export function TeamPage(props: { session: Session }) {
  const members = useLoad(() => api<{ data: Member[] }>("GET", "/v1/team/members"));
  const account = useLoad(() => api<Tenant>("GET", "/v1/account"));
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<"member" | "admin">("member");
  const [link, setLink] = useState<{ email: string; url: string; purpose: string } | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [revokeKeys, setRevokeKeys] = useState(false);
  const { error, setError, attempt } = useAttempt();

  async function linkFor(member: { id: string; email: string }) {
    const token = await api<{ token: string; purpose: string }>(
      "POST",
      `/v1/team/members/${member.id}/password-token`,
    );
    setLink({
      email: member.email,
      purpose: token.purpose,
      url: `${window.location.origin}/set-password#token=${token.token}`,
    });
  }

  const seats = account.data?.seats;
  const used = members.data?.data.length;
  return (
    <Page
      title="Team"
      lead={
        seats !== undefined && used !== undefined
          ? `${used} of ${seats} seats in use.`
          : "Members of your account."
      }
    >
      {members.error ? (
        <Problem error={members.error} />
      ) : (
        <>
          {props.session.member.role === "admin" ? (
            <Card title="Invite a member">
              <form
                className="inline-form"
                onSubmit={async (event) => {
                  event.preventDefault();
                  await attempt(async () => {
                    const added = await api<Member>("POST", "/v1/team/members", { email, role });
                    await linkFor(added);
                    setEmail("");
                    await members.reload();
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
              <Problem error={error} />
              {link ? (
                <div className="notice secret" role="status">
                  <p>
                    <strong>
                      {link.purpose === "reset" ? "Password reset link" : "Invitation link"} for{" "}
                      {link.email}.
                    </strong>{" "}
                    Send it to them privately; it works once
                    {link.purpose === "reset" ? " within a day" : " within 7 days"}.
                  </p>
                  <div className="secret-row">
                    <code className="secret-value">{link.url}</code>
                    <CopyButton text={link.url} />
                  </div>
                </div>
              ) : null}
            </Card>
          ) : null}
          {removing ? (
            <Card title={`Remove ${removing.email}`}>
              <form
                onSubmit={async (event) => {
                  event.preventDefault();
                  await attempt(async () => {
                    await api(
                      "DELETE",
                      `/v1/team/members/${removing.id}?revoke_keys=${revokeKeys ? "true" : "false"}`,
                    );
                    setRemoving(null);
                    await members.reload();
                  });
                }}
              >
                <p>
                  They lose access to the dashboard at once. The API keys they issued belong to the
                  account, not to them, and keep working unless you revoke them.
                </p>
                <label className="checkbox">
                  <input
                    type="checkbox"
                    checked={revokeKeys}
                    onChange={(event) => setRevokeKeys(event.target.checked)}
                  />{" "}
                  Also revoke the API keys {removing.email} issued
                </label>
                <div className="inline-form">
                  <button type="submit" className="button danger">
                    Remove member
                  </button>
                  <button type="button" className="button" onClick={() => setRemoving(null)}>
                    Cancel
                  </button>
                </div>
              </form>
            </Card>
          ) : null}
          <Card title="Members">
            {!members.data ? (
              <Loading />
            ) : (
              <DataTable columns={["Email", "Role", "Since"]} actions>
                {members.data.data.map((member) => (
                  <tr key={member.id}>
                    <td>
                      {member.email}
                      {member.id === props.session.member.id ? (
                        <span className="muted small"> (you)</span>
                      ) : null}
                    </td>
                    <td>{member.role === "admin" ? "Admin" : "Member"}</td>
                    <td>{formatDate(member.created_at)}</td>
                    <td className="actions">
                      {props.session.member.role === "admin" ? (
                        <>
                          <button
                            type="button"
                            className="button"
                            onClick={() => void linkFor(member).catch(setError)}
                          >
                            Password link
                          </button>
                          {member.id !== props.session.member.id ? (
                            <button
                              type="button"
                              className="button danger"
                              onClick={() => {
                                setRevokeKeys(false);
                                setRemoving(member);
                              }}
                            >
                              Remove
                            </button>
                          ) : null}
                        </>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </DataTable>
            )}
          </Card>
        </>
      )}
    </Page>
  );
}
