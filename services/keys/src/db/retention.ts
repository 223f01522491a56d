// What the keys service removes once it can no longer be used (decision 0394): dashboard sessions
// and their refresh tokens, password and invite links, and trials that waited for a card's
// authentication. Each is kept a grace period past its expiry, then removed in small batches.
import type { Pool } from "@th/db";
import { deleteInBatches, type RetentionRule } from "@th/service-kit";
import { PENDING_TRIAL_MS } from "./trials.ts";

interface Expiring {
  table: string;
  /** The oldest row's creation (`at`), for its age. */
  oldestSql: string;
  /** The earliest expiry (`at`) of a row the rule has yet to remove; it goes `keepMs` after. */
  earliestExpirySql: string;
  /** Removes at most $2 rows that expired before $1. */
  deleteSql: string;
}

async function instant(pool: Pool, sql: string): Promise<Date | null> {
  const { rows } = await pool.query<{ at: Date | null }>(sql);
  return rows[0]?.at ?? null;
}

/** A rule for rows that expire: kept `keepMs` past their expiry, then removed. */
function expiringRule(rule: Expiring, keepMs: number): RetentionRule {
  return {
    table: `keys.${rule.table}`,
    keepMs,
    sweep: (pool: Pool, now: Date, limit: number) =>
      deleteInBatches(pool, rule.deleteSql, [new Date(now.getTime() - keepMs)], limit),
    async oldestRowAgeMs(pool: Pool, now: Date) {
      const at = await instant(pool, rule.oldestSql);
      return at ? Math.max(0, now.getTime() - at.getTime()) : null;
    },
    async behindMs(pool: Pool, now: Date) {
      const at = await instant(pool, rule.earliestExpirySql);
      return at ? now.getTime() - at.getTime() - keepMs : null;
    },
  };
}

/**
 * The tables and how each is removed, in the order a round runs them. Reuse detection (decision
 * 0337) needs a session's row and its tokens for as long as the session can be refreshed, which
 * ends at its absolute expiry: tokens go only once their session expired the grace ago, and the
 * session only once no token of it is left, so neither goes while the other may still be asked
 * about.
 */
export const EXPIRING: readonly Expiring[] = [
  {
    table: "dashboard_refresh_tokens",
    oldestSql: "SELECT min(issued_at) AS at FROM dashboard_refresh_tokens",
    earliestExpirySql: `SELECT s.expires_at AS at FROM dashboard_sessions s
        WHERE EXISTS (SELECT 1 FROM dashboard_refresh_tokens t WHERE t.session_id = s.id)
        ORDER BY s.expires_at LIMIT 1`,
    deleteSql: `DELETE FROM dashboard_refresh_tokens WHERE token_hash = ANY(ARRAY(
        SELECT t.token_hash FROM dashboard_sessions s
          JOIN dashboard_refresh_tokens t ON t.session_id = s.id
         WHERE s.expires_at < $1 ORDER BY s.expires_at LIMIT $2))`,
  },
  {
    table: "dashboard_sessions",
    oldestSql: "SELECT min(created_at) AS at FROM dashboard_sessions",
    earliestExpirySql: "SELECT min(expires_at) AS at FROM dashboard_sessions",
    deleteSql: `DELETE FROM dashboard_sessions WHERE id = ANY(ARRAY(
        SELECT s.id FROM dashboard_sessions s
         WHERE s.expires_at < $1
           AND NOT EXISTS (SELECT 1 FROM dashboard_refresh_tokens t WHERE t.session_id = s.id)
         ORDER BY s.expires_at LIMIT $2))`,
  },
  // Used, replaced and expired links all answer one refusal: removing them changes no answer.
  {
    table: "password_tokens",
    oldestSql: "SELECT min(created_at) AS at FROM password_tokens",
    earliestExpirySql: "SELECT min(expires_at) AS at FROM password_tokens",
    deleteSql: `DELETE FROM password_tokens WHERE token_hash = ANY(ARRAY(
        SELECT token_hash FROM password_tokens WHERE expires_at < $1
         ORDER BY expires_at LIMIT $2))`,
  },
  // Refused an hour after it was made, activated or not; until removed it holds what the
  // sign-up form gave, the password hash included.
  {
    table: "pending_trials",
    oldestSql: "SELECT min(created_at) AS at FROM pending_trials",
    earliestExpirySql: `SELECT min(created_at) + make_interval(secs => ${PENDING_TRIAL_MS / 1000}) AS at
        FROM pending_trials`,
    deleteSql: `DELETE FROM pending_trials WHERE setup_intent_ref = ANY(ARRAY(
        SELECT setup_intent_ref FROM pending_trials
         WHERE created_at < $1::timestamptz - make_interval(secs => ${PENDING_TRIAL_MS / 1000})
         ORDER BY created_at LIMIT $2))`,
  },
];

export function keysRetentionRules(graceMs: number): RetentionRule[] {
  return EXPIRING.map((rule) => expiringRule(rule, graceMs));
}
