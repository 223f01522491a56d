import { describe, expect, it } from "vitest";
import {
  type KeyRow,
  keyIssuedEvent,
  keyRevokedEvent,
  keyView,
  ROTATION_REMINDER_DAYS,
} from "./api-keys.ts";

const DAY_MS = 86_400_000;
const created = new Date("2026-01-01T00:00:00.000Z");
const row: KeyRow = {
  id: "key_1",
  tenant_id: "ten_1",
  member_id: "mem_1",
  label: "ci",
  key_hash: "hash",
  last4: "abcd",
  created_at: created,
  revoked_at: null,
};

describe("key views", () => {
  it("are due for rotation from the reminder day on, not the day before", () => {
    const before = new Date(created.getTime() + (ROTATION_REMINDER_DAYS - 1) * DAY_MS);
    const on = new Date(created.getTime() + ROTATION_REMINDER_DAYS * DAY_MS);
    expect(keyView(row, before)).toMatchObject({ age_days: 89, rotation_due: false });
    expect(keyView(row, on)).toMatchObject({ age_days: 90, rotation_due: true });
  });

  it("say whether the key is revoked and whether its issuer left the team, never its hash", () => {
    const view = keyView({ ...row, revoked_at: created }, created, new Date());
    expect(view).toMatchObject({ revoked: true, member_removed: true, last4: "abcd" });
    expect(JSON.stringify(view)).not.toContain("hash");
  });
});

describe("key events", () => {
  it("announce an issued key with its hash and issue time", () => {
    expect(keyIssuedEvent(row)).toEqual({
      key_id: "key_1",
      tenant_id: "ten_1",
      key_hash: "hash",
      last4: "abcd",
      member_id: "mem_1",
      label: "ci",
      issued_at: "2026-01-01T00:00:00.000Z",
    });
  });

  it("announce a revocation with who revoked it and why", () => {
    const at = new Date("2026-02-01T00:00:00.000Z");
    expect(keyRevokedEvent(row, "mem_2", "compromise", at)).toMatchObject({
      key_id: "key_1",
      revoked_by_member_id: "mem_2",
      reason: "compromise",
      revoked_at: "2026-02-01T00:00:00.000Z",
    });
  });
});
