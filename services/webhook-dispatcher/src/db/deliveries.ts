import type { FailureKind, Tier, TopicContract } from "@th/contracts";
import { type Pool, inTransaction as runInTransaction } from "@th/db";
import { enqueueEvent } from "@th/service-kit";
import type { DeliveryFacts } from "../domain/outcome.ts";
import type { Share } from "../domain/shard.ts";

/** A claimed delivery with its endpoint and tenant, as the claim query returns it. */
export interface ClaimedRow extends DeliveryFacts {
  state: string;
  attempts: number;
  due_at: Date;
  charged_at: Date | null;
  lease_token: string;
  trace_context: Record<string, string> | null;
  url: string;
  endpoint_deleted_at: Date | null;
  tier: Tier | null;
  status: string | null;
  lead_views_per_month: number | null;
  concurrent_webhooks: number | null;
  billing_anniversary: string | null;
}

/** A leased delivery: what the statements guarded by its lease need. */
export interface Leased {
  id: string;
  lease_token: string;
}

/** Tenants waiting per instance below which instances claim for every tenant (decision 0180). */
const MIN_TENANTS_PER_SHARE = 4;

export interface ClaimInput {
  now: Date;
  limit: number;
  /** Deliveries this process already holds, by tenant: they count against each tenant's cap. */
  held: ReadonlyMap<string, number>;
  defaultConcurrency: number;
  /** Rows leased per tenant, as a multiple of its cap: the ones beyond its free slots wait. */
  depth: number;
  retrySweepGraceMs: number;
  leaseMs: number;
  share: Share;
}

/**
 * Leases due rows of the tenants in `share`, at most `depth` times the tenant's cap counting
 * the ones this process already holds (slots held by other instances are found at acquire time). Instances
 * claiming disjoint shares do not lease rows for the same slots.
 */
export async function claimDeliveries(pool: Pool, input: ClaimInput): Promise<ClaimedRow[]> {
  const { rows } = await pool.query<ClaimedRow>({
    // Named: parsing and planning this statement cost about a third of running it. Its plan
    // keeps the same shape for any values (index walks per tenant and per candidate).
    name: "dispatcher-claim",
    text: `WITH RECURSIVE active AS (
         (SELECT d.tenant_id FROM deliveries d
           WHERE d.state IN ('pending', 'retrying', 'exhausted', 'parked')
           ORDER BY d.tenant_id LIMIT 1)
         UNION ALL
         SELECT (SELECT d.tenant_id FROM deliveries d
                  WHERE d.state IN ('pending', 'retrying', 'exhausted', 'parked')
                    AND d.tenant_id > a.tenant_id
                  ORDER BY d.tenant_id LIMIT 1)
           FROM active a WHERE a.tenant_id IS NOT NULL
       ), sharded AS (
         -- Shares apply while there are several waiting tenants per instance: with fewer, an
         -- instance's share would leave it (and the others' spare capacity) with no work.
         SELECT $8::int > 1 AND count(*) >= $8::int * ${MIN_TENANTS_PER_SHARE} AS yes
           FROM active WHERE tenant_id IS NOT NULL
       ), due AS (
         SELECT x.* FROM active a
         LEFT JOIN tenants t ON t.tenant_id = a.tenant_id
         LEFT JOIN unnest($6::text[], $7::int[]) AS held(tenant_id, n) ON held.tenant_id = a.tenant_id
         CROSS JOIN LATERAL (
           -- ROWS: in the default RANGE frame each rank waits for the last row due at the same
           -- moment, and a batch of matches is inserted due at one moment, so the claim read a
           -- tenant's whole batch to rank its first rows.
           SELECT d.id, d.created_at, d.state, d.endpoint_id, d.tenant_id,
                  row_number() OVER (ORDER BY d.due_at ROWS UNBOUNDED PRECEDING) AS rank
             FROM deliveries d
            WHERE d.tenant_id = a.tenant_id
              AND d.state IN ('pending', 'retrying', 'exhausted', 'parked')
              AND d.due_at <= $1
              AND (d.lease_until IS NULL OR d.lease_until < $1)
              AND (d.state IN ('pending', 'parked')
                   OR (d.state = 'retrying'
                       AND d.due_at <= $1::timestamptz - make_interval(secs => $4 / 1000.0)))
            ORDER BY d.due_at
            -- Candidates go by rank (every tenant's first before any tenant's second), so rows of
            -- a tenant past its share of the candidates (at least 8) are rarely picked; reading
            -- them made each claim read about ten rows for every one it leased. The share is of
            -- the tenants with rows due now: tenants whose deliveries all wait for a later retry
            -- would otherwise shrink a busy tenant's share to the floor.
            LIMIT LEAST(
              GREATEST(GREATEST(COALESCE(t.concurrent_webhooks, $3), 1) * $10::int - COALESCE(held.n, 0), 0),
              GREATEST(ceil($2 * 4.0 / GREATEST((
                SELECT count(*) FROM active w
                 WHERE w.tenant_id IS NOT NULL
                   AND (NOT (SELECT yes FROM sharded)
                        OR (hashtext(w.tenant_id) & 2147483647) % $8::int = $9::int)
                   AND EXISTS (SELECT FROM deliveries n
                                WHERE n.tenant_id = w.tenant_id
                                  AND n.state IN ('pending', 'retrying', 'exhausted', 'parked')
                                  AND n.due_at <= $1)), 1)), 8))
         ) x
         WHERE a.tenant_id IS NOT NULL
           AND (NOT (SELECT yes FROM sharded)
                OR (hashtext(a.tenant_id) & 2147483647) % $8::int = $9::int)
         UNION ALL
         -- Exhausted deliveries need no slot: they are dead-lettered, not sent.
         SELECT d.id, d.created_at, d.state, d.endpoint_id, d.tenant_id, 0 AS rank FROM deliveries d
          WHERE d.state = 'exhausted' AND d.due_at <= $1
            AND (d.lease_until IS NULL OR d.lease_until < $1)
       ), candidates AS (
         SELECT * FROM due ORDER BY rank LIMIT $2 * 4
       ), picked AS (
         -- Another instance claiming at the same moment has locked some of the same candidates;
         -- skipping them (rather than waiting and then finding them leased) gives each instance
         -- its own rows. Each candidate is looked up and locked on its own, in rank order, until
         -- enough are locked: a join of all of them would read every candidate (or, by the
         -- planner's estimate on a young table, the whole table) to lease a few.
         SELECT c.* FROM candidates c
         CROSS JOIN LATERAL (
           -- With its created_at, the lookup goes to the one partition the row is in.
           SELECT FROM deliveries d
            WHERE d.id = c.id AND d.created_at = c.created_at AND d.state = c.state
              AND d.due_at <= $1
              AND (d.lease_until IS NULL OR d.lease_until < $1)
              FOR UPDATE SKIP LOCKED
         ) locked
         ORDER BY c.rank LIMIT $2
       )
       UPDATE deliveries d
          SET lease_token = gen_random_uuid(),
              lease_until = $1::timestamptz + make_interval(secs => $5 / 1000.0)
         FROM picked
         JOIN endpoints e ON e.id = picked.endpoint_id
         LEFT JOIN tenants t ON t.tenant_id = picked.tenant_id
        WHERE d.id = picked.id AND d.created_at = picked.created_at
       RETURNING d.id, d.endpoint_id, d.tenant_id, d.watchlist_id, d.match_id, d.folio,
                 d.event_type, d.body, d.state, d.attempts, d.replay_no, d.due_at, d.charged_at,
                 d.lease_token, d.first_attempted_at, d.trace_context, e.url,
                 e.deleted_at AS endpoint_deleted_at, t.tier, t.status, t.lead_views_per_month,
                 t.concurrent_webhooks, to_char(t.billing_anniversary, 'YYYY-MM-DD') AS billing_anniversary`,
    values: [
      input.now,
      input.limit,
      input.defaultConcurrency,
      input.retrySweepGraceMs,
      input.leaseMs,
      [...input.held.keys()],
      [...input.held.values()],
      input.share.count,
      input.share.index,
      input.depth,
    ],
  });
  return rows;
}

/** Gives leased rows back without an attempt, due again no earlier than `dueAt`. */
export async function releaseDeliveries(
  pool: Pool,
  rows: readonly Leased[],
  dueAt: Date,
): Promise<void> {
  await pool.query(
    `UPDATE deliveries d SET lease_token = NULL, lease_until = NULL,
            due_at = GREATEST(d.due_at, $3::timestamptz)
       FROM unnest($1::uuid[], $2::uuid[]) AS r(id, lease_token)
      WHERE d.id = r.id AND d.lease_token = r.lease_token`,
    [rows.map((row) => row.id), rows.map((row) => row.lease_token), dueAt],
  );
}

/** Parks leased rows with their reason, each due again at its own time. */
export async function parkDeliveries(
  pool: Pool,
  rows: readonly Leased[],
  reason: string,
  until: readonly Date[],
): Promise<void> {
  await pool.query(
    `UPDATE deliveries d SET state = 'parked', parked_reason = $3, due_at = r.due_at,
            lease_token = NULL, lease_until = NULL
       FROM unnest($1::uuid[], $2::uuid[], $4::timestamptz[]) AS r(id, lease_token, due_at)
      WHERE d.id = r.id AND d.lease_token = r.lease_token`,
    [rows.map((row) => row.id), rows.map((row) => row.lease_token), reason, until],
  );
}

/** What a dead-lettered delivery's earlier attempts left on its row. */
export interface AttemptHistory {
  attempts: number;
  last_status_code: number | null;
  last_failure: FailureKind | null;
  last_error: string | null;
  first_attempted_at: Date | null;
  last_attempted_at: Date | null;
}

/**
 * Dead-letters a leased row without an attempt and enqueues the event `eventOf` makes of its
 * history, in one transaction; nothing when the lease was lost.
 */
export async function deadLetterDelivery<T>(
  pool: Pool,
  input: { row: Leased; reason: string; at: Date; holdUntil: Date },
  contract: TopicContract<T>,
  eventOf: (history: AttemptHistory) => T,
): Promise<void> {
  await runInTransaction(pool, async (client) => {
    const { rows } = await client.query<AttemptHistory>(
      `UPDATE deliveries SET state = 'dead_letter', dead_lettered_at = $3, dead_letter_reason = $4,
              hold_until = $5, lease_token = NULL, lease_until = NULL
        WHERE id = $1 AND lease_token = $2
        RETURNING attempts, last_status_code, last_failure, last_error, first_attempted_at,
                  last_attempted_at`,
      [input.row.id, input.row.lease_token, input.at, input.reason, input.holdUntil],
    );
    const updated = rows[0];
    if (!updated) {
      return;
    }
    await enqueueEvent(client, contract, eventOf(updated));
  });
}

/** One delivery to create: a `match.found` record for the endpoints subscribed to its watchlist. */
export interface NewDelivery {
  tenant_id: string;
  watchlist_id: string;
  match_id: string;
  folio: string;
  body: string;
  trace_context: Record<string, string> | null;
}

/**
 * Creates the deliveries, one row per (subscribed endpoint, match), so a redelivered record is a
 * no-op. deliveries is partitioned by created_at, so (endpoint, match) cannot be a unique key:
 * the statement skips pairs already stored, under a transaction lock per tenant that makes
 * intakes of one tenant's matches take turns (matches of a tenant, the only ones that can share
 * a pair, cannot both pass the check). The rows are created, and due, at `at` (the
 * dispatcher's clock, which the claim and retention read; the database's when not given).
 * Answers how many rows were created.
 */
export async function insertDeliveries(
  pool: Pool,
  input: readonly NewDelivery[],
  eventType: string,
  at?: Date,
): Promise<number> {
  const tenants = [...new Set(input.map((row) => row.tenant_id))].sort();
  return runInTransaction(pool, async (client) => {
    // In one order, so two intakes sharing tenants cannot wait on each other.
    await client.query({
      name: "dispatcher-intake-locks",
      text: `SELECT pg_advisory_xact_lock(hashtext('dispatcher.intake'), hashtext(t))
               FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n`,
      values: [tenants],
    });
    const inserted = await client.query({
      // Named: planned once per connection, as its plan does not depend on the values.
      name: "dispatcher-insert-deliveries",
      text: `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio,
                               event_type, body, trace_context, created_at, due_at)
       SELECT DISTINCT ON (e.id, m.match_id)
              gen_random_uuid(), e.id, e.tenant_id, e.watchlist_id, m.match_id, m.folio, $2,
              m.body, m.trace_context, coalesce($3, now()), coalesce($3, now())
         FROM json_to_recordset($1::json)
              AS m(tenant_id text, watchlist_id text, match_id text, folio text, body text,
                   trace_context jsonb)
         JOIN endpoints e ON e.tenant_id = m.tenant_id AND e.watchlist_id = m.watchlist_id
                         AND e.deleted_at IS NULL AND $2 = ANY (e.events)
        WHERE NOT EXISTS (SELECT 1 FROM deliveries d
                           WHERE d.endpoint_id = e.id AND d.match_id = m.match_id)`,
      // One JSON document rather than Postgres arrays: serialising it is one native call, where
      // array parameters are escaped element by element.
      values: [JSON.stringify(input), eventType, at ?? null],
    });
    return inserted.rowCount ?? 0;
  });
}

/**
 * Hands a retry record's delivery back to the claim, due at `dueAt`, if the record is still its
 * next attempt (same attempt count and replay); answers whether it was.
 */
export async function pendRetry(
  pool: Pool,
  retry: { id: string; attempts: number; replayNo: number; dueAt: Date },
): Promise<boolean> {
  const updated = await pool.query(
    `UPDATE deliveries SET state = 'pending', due_at = $4
      WHERE id = $1 AND state = 'retrying' AND attempts = $2 AND replay_no = $3`,
    [retry.id, retry.attempts, retry.replayNo, retry.dueAt],
  );
  return (updated.rowCount ?? 0) > 0;
}

/** Makes a tenant's parked deliveries due now; answers how many there were. */
export async function unparkTenant(pool: Pool, tenantId: string): Promise<number> {
  const released = await pool.query(
    `UPDATE deliveries SET state = 'pending', due_at = now(), parked_reason = NULL
      WHERE tenant_id = $1 AND state = 'parked'`,
    [tenantId],
  );
  return released.rowCount ?? 0;
}

/** Deliveries parked, and dead letters still held, for the waiting gauge. */
export async function countWaiting(pool: Pool): Promise<{ state: string; n: number }[]> {
  const { rows } = await pool.query<{ state: string; n: string }>(
    `SELECT 'parked' AS state, count(*) AS n FROM deliveries WHERE state = 'parked'
     UNION ALL
     SELECT 'dead_letter', count(*) FROM deliveries WHERE state = 'dead_letter' AND hold_until > now()`,
  );
  return rows.map((row) => ({ state: row.state, n: Number(row.n) }));
}
