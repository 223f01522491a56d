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
  it("K2 are due for rotation once older than 90 days: not at 90 days, but a millisecond after", () => {
    const at = (ms: number) => new Date(created.getTime() + ms);
    const ninety = ROTATION_REMINDER_DAYS * DAY_MS;
    expect(keyView(row, at(ninety - DAY_MS))).toMatchObject({ age_days: 89, rotation_due: false });
    expect(keyView(row, at(ninety))).toMatchObject({ age_days: 90, rotation_due: false });
    expect(keyView(row, at(ninety + 1))).toMatchObject({ age_days: 90, rotation_due: true });
    expect(keyView(row, at(ninety + DAY_MS))).toMatchObject({ age_days: 91, rotation_due: true });
  });

  it("say whether the key is revoked and whether its issuer left the team, never its hash", () => {
    const view = keyView({ ...row, revoked_at: created }, created, { memberRemovedAt: new Date() });
    expect(view).toMatchObject({ revoked: true, member_removed: true, last4: "abcd" });
    expect(JSON.stringify(view)).not.toContain("hash");
  });

  it("name the key a rotation issued to replace, and the active key replacing this one", () => {
    expect(keyView({ ...row, replaces_key_id: "key_0" }, created)).toMatchObject({
      replaces_key_id: "key_0",
      replaced_by_key_id: null,
    });
    expect(keyView(row, created, { replacedByKeyId: "key_2" })).toMatchObject({
      replaces_key_id: null,
      replaced_by_key_id: "key_2",
    });
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
