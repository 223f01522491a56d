import { parseLimits } from "@th/client";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ApiFailure } from "../api.ts";
import type { Session } from "../session.ts";
import { KeyRow, keysGated } from "./keys.tsx";

const noLimits = parseLimits(new Headers());

const session: Session = {
  member: { id: "mem_a", email: "ada@example.com", role: "admin" },
  tenant: { id: "ten_1", company: "Acme", tier: "team" },
  csrf_token: "c",
  expires_at: "2026-01-01T00:00:00.000Z",
  refresh_expires_at: "2026-01-02T00:00:00.000Z",
};
const apiKey: Parameters<typeof KeyRow>[0]["apiKey"] = {
  id: "key_1",
  label: "CRM sync",
  last4: "a1b2",
  member_id: "mem_a",
  member_removed: false,
  revoked: false,
  created_at: "2026-01-01T00:00:00.000Z",
  age_days: 12,
  rotation_due: false,
  replaces_key_id: null,
  replaced_by_key_id: null,
};

function row(shown = apiKey, keys = [shown]) {
  return renderToStaticMarkup(
    <table>
      <tbody>
        <KeyRow
          apiKey={shown}
          keys={keys}
          session={session}
          onRevoke={() => {}}
          onRotate={() => {}}
        />
      </tbody>
    </table>,
  );
}

describe("the API keys page", () => {
  it("hides everything behind the refusal when the tier or the role does not allow keys", () => {
    expect(
      keysGated(new ApiFailure(403, { error: "tier_required", detail: "x" }, noLimits, null)),
    ).toBe(true);
    expect(
      keysGated(new ApiFailure(403, { error: "forbidden", detail: "x" }, noLimits, null)),
    ).toBe(true);
    expect(keysGated(new ApiFailure(500, { error: "internal", detail: "x" }, noLimits, null))).toBe(
      false,
    );
    expect(keysGated(undefined)).toBe(false);
  });

  it("shows an active key of the viewer's with its last four and a revoke button", () => {
    const html = row();
    expect(html).toContain("(yours)");
    expect(html).toContain("th_live_…a1b2");
    expect(html).toContain("Active");
    expect(html).toContain('aria-label="Revoke CRM sync (…a1b2)"');
    expect(html).not.toContain('role="note"');
  });

  it("shows a revoked old key of a removed member without a revoke button or reminder", () => {
    const html = row({
      ...apiKey,
      member_id: "mem_b",
      member_removed: true,
      revoked: true,
      age_days: 120,
    });
    expect(html).not.toContain("(yours)");
    expect(html).toContain("(issued by a removed member)");
    expect(html).toContain("Revoked");
    expect(html).not.toContain("aria-label=");
    expect(html).not.toContain('role="note"');
  });

  it("Authentication 8: offers a two-step rotation, then asks to revoke the old key once its replacement is issued", () => {
    expect(row()).toContain('aria-label="Rotate CRM sync (…a1b2)"');
    const replacement = {
      ...apiKey,
      id: "key_2",
      last4: "c3d4",
      replaces_key_id: "key_1",
    };
    const old = { ...apiKey, replaced_by_key_id: "key_2", rotation_due: true };
    const oldRow = row(old, [old, replacement]);
    expect(oldRow).toContain("Being replaced by th_live_…c3d4");
    expect(oldRow).toContain("revoke this one (step 2 of 2)");
    expect(oldRow).not.toContain(">Rotate<");
    expect(oldRow).toContain('aria-label="Revoke CRM sync (…a1b2)"');
    // The reminder has been acted on: the rotation under way says what is left to do.
    expect(oldRow).not.toContain('role="note"');
    expect(row(replacement, [old, replacement])).toContain("Replaces th_live_…a1b2");
  });

  it("K2 reminds to rotate an active key the API says is older than ninety days, and not before", () => {
    expect(row({ ...apiKey, age_days: 90 })).not.toContain('role="note"');
    expect(row({ ...apiKey, age_days: 90, rotation_due: true })).toContain('role="note"');
  });
});
