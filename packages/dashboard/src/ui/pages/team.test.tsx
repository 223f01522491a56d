import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Session } from "../session.ts";
import { MemberRow, PasswordLinkNotice, RemoveMemberCard } from "./team.tsx";

const admin: Session = {
  member: { id: "mem_a", email: "ada@example.com", role: "admin" },
  tenant: { id: "ten_1", company: "Acme", tier: "team" },
  csrf_token: "c",
  expires_at: "2026-01-01T00:00:00.000Z",
  refresh_expires_at: "2026-01-02T00:00:00.000Z",
};
const member: { id: string; email: string; role: "admin" | "member"; created_at: string } = {
  id: "mem_b",
  email: "bo@example.com",
  role: "member",
  created_at: "2026-01-01T00:00:00.000Z",
};
const noop = () => {};

function row(session: Session, shown = member) {
  return renderToStaticMarkup(
    <table>
      <tbody>
        <MemberRow member={shown} session={session} onLink={noop} onRemove={noop} />
      </tbody>
    </table>,
  );
}

describe("a member's row on the team page", () => {
  it("gives an admin a password link and removal for another member", () => {
    const html = row(admin);
    expect(html).toContain("Password link");
    expect(html).toContain("Remove");
    expect(html).not.toContain("(you)");
  });

  it("marks the admin's own row and offers no removal of themselves", () => {
    const html = row(admin, { ...member, id: "mem_a", email: "ada@example.com", role: "admin" });
    expect(html).toContain("(you)");
    expect(html).toContain("Password link");
    expect(html).not.toContain("Remove");
  });

  it("offers a plain member no actions", () => {
    const html = row({ ...admin, member: { ...admin.member, role: "member" } });
    expect(html).not.toContain("Password link");
    expect(html).not.toContain("Remove");
  });
});

describe("the team page's dialogs", () => {
  it("shows an invitation link with its seven-day life and a copy button", () => {
    const html = renderToStaticMarkup(
      <PasswordLinkNotice
        link={{ email: "bo@example.com", purpose: "invite", url: "https://x/set-password#token=t" }}
      />,
    );
    expect(html).toContain("Invitation link");
    expect(html).toContain("bo@example.com");
    expect(html).toContain("within 7 days");
    expect(html).toContain("https://x/set-password#token=t");
  });

  it("asks before removing a member, leaving their keys working unless ticked", () => {
    const html = renderToStaticMarkup(
      <RemoveMemberCard
        member={member}
        revokeKeys={false}
        setRevokeKeys={noop}
        attempt={async () => {}}
        onRemoved={async () => {}}
        onCancel={noop}
      />,
    );
    expect(html).toContain("Remove bo@example.com");
    expect(html).toContain("keep working unless you revoke them");
    expect(html).toContain("Also revoke the API keys bo@example.com issued");
    expect(html).not.toContain("checked");
  });
});
