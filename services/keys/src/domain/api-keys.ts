import type { KeyIssued, KeyRevoked, KeyRevokeReason } from "@th/contracts";
import { DAY_MS } from "./tenants.ts";

/** Keys older than this (strictly) are flagged for rotation. */
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
  /** The key this one was issued to replace (a two-step rotation). */
  replaces_key_id?: string | null;
}

/**
 * The spec's reminder shows "once a key is older than 90 days": a key exactly 90 days old is not
 * yet due, one a millisecond older is.
 */
function rotationDue(createdAt: Date, now: Date): boolean {
  return now.getTime() - createdAt.getTime() > ROTATION_REMINDER_DAYS * DAY_MS;
}

/** What a key's list row knows besides the key: its issuer's removal, its active replacement. */
export interface KeyContext {
  memberRemovedAt?: Date | null;
  replacedByKeyId?: string | null;
}

/** A key as its tenant's admins see it. */
export function keyView(row: KeyRow, now: Date, context: KeyContext = {}) {
  const ageDays = Math.floor((now.getTime() - row.created_at.getTime()) / DAY_MS);
  return {
    id: row.id,
    label: row.label,
    last4: row.last4,
    member_id: row.member_id,
    member_removed: (context.memberRemovedAt ?? null) !== null,
    revoked: row.revoked_at !== null,
    created_at: row.created_at.toISOString(),
    age_days: ageDays,
    rotation_due: rotationDue(row.created_at, now),
    replaces_key_id: row.replaces_key_id ?? null,
    replaced_by_key_id: context.replacedByKeyId ?? null,
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
