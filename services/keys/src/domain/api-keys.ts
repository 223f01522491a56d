import type { KeyIssued, KeyRevoked, KeyRevokeReason } from "@th/contracts";
import { DAY_MS } from "./tenants.ts";

/** Keys at least this old are flagged for rotation. */
export const ROTATION_REMINDER_DAYS = 90;

/** An API key as stored: only its hash and last four characters, never the secret. */
export interface KeyRow {
  id: string;
  tenant_id: string;
  member_id: string;
  label: string;
  key_hash: string;
  last4: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** A key as its tenant's admins see it; `memberRemovedAt` is when its issuer left the team. */
export function keyView(row: KeyRow, now: Date, memberRemovedAt: Date | null = null) {
  const ageDays = Math.floor((now.getTime() - row.created_at.getTime()) / DAY_MS);
  return {
    id: row.id,
    label: row.label,
    last4: row.last4,
    member_id: row.member_id,
    member_removed: memberRemovedAt !== null,
    revoked: row.revoked_at !== null,
    created_at: row.created_at.toISOString(),
    age_days: ageDays,
    rotation_due: ageDays >= ROTATION_REMINDER_DAYS,
  };
}

/** What `key.issued` and `key.revoked` both say of the key. */
function keyFields(row: KeyRow) {
  return {
    key_id: row.id,
    tenant_id: row.tenant_id,
    key_hash: row.key_hash,
    last4: row.last4,
    member_id: row.member_id,
    label: row.label,
  };
}

export function keyIssuedEvent(row: KeyRow): KeyIssued {
  return { ...keyFields(row), issued_at: row.created_at.toISOString() };
}

export function keyRevokedEvent(
  row: KeyRow,
  revokedBy: string | null,
  reason: KeyRevokeReason,
  revokedAt: Date,
): KeyRevoked {
  return {
    ...keyFields(row),
    revoked_by_member_id: revokedBy,
    reason,
    revoked_at: revokedAt.toISOString(),
  };
}
