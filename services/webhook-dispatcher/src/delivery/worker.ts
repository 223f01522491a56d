import { randomUUID } from "node:crypto";
import { billingPeriodAt, tierOpens } from "@th/billing";
import {
  contracts,
  type DeadLetterReason,
  type DeliveryAttempted,
  type DeliveryDeadLetter,
  type DeliveryRetry,
  type FailureKind,
  type LeadViewRecorded,
  type Tier,
} from "@th/contracts";
import { type Pool, inTransaction as runInTransaction } from "@th/db";
import { type LeadViewMeter, utcDay } from "@th/quota";
import { enqueueEvent, type OutboxRelay } from "@th/service-kit";
import { inSpan, type Logger, traceContextOf, withExtractedContext } from "@th/telemetry";
import { signatureHeader } from "@th/webhooks";
import {
  type AttemptResult,
  DEAD_LETTER_AFTER_MS,
  delayBeforeAttempt,
  HOLD_MS,
  MAX_ATTEMPTS,
  retryStage,
  scaleLong,
  verdictOf,
} from "../domain/schedule.ts";
import { type Share, WHOLE } from "../domain/shard.ts";
import type { TenantSlots } from "./concurrency.ts";
import { type AttemptRecord, createAttemptRecorder, outboxEvent } from "./recorder.ts";
import type { SecretStore } from "./secret-store.ts";
import { type Sender, USER_AGENT } from "./sender.ts";

/** A claimed delivery with its endpoint and tenant, as the claim query returns it. */
interface ClaimedRow {
  id: string;
  endpoint_id: string;
  tenant_id: string;
  watchlist_id: string;
  match_id: string;
  folio: string;
  event_type: string;
  body: string;
  state: string;
  attempts: number;
  replay_no: number;
  due_at: Date;
  charged_at: Date | null;
  lease_token: string;
  first_attempted_at: Date | null;
  trace_context: Record<string, string> | null;
  url: string;
  endpoint_deleted_at: Date | null;
  tier: Tier | null;
  status: string | null;
  lead_views_per_month: number | null;
  concurrent_webhooks: number | null;
  billing_anniversary: string | null;
}

/** Which delivery an event is about: the fields every delivery event starts with. */
function deliveryOf(
  row: ClaimedRow,
): Pick<
  DeliveryAttempted,
  "delivery_id" | "endpoint_id" | "tenant_id" | "watchlist_id" | "match_id" | "folio"
> {
  return {
    delivery_id: row.id,
    endpoint_id: row.endpoint_id,
    tenant_id: row.tenant_id,
    watchlist_id: row.watchlist_id,
    match_id: row.match_id,
    folio: row.folio,
  };
}

export interface WorkerOptions {
  pool: Pool;
  logger: Logger;
  sender: Sender;
  slots: TenantSlots;
  secrets: SecretStore;
  meter: LeadViewMeter;
  relay: OutboxRelay;
  leaseMs: number;
  pollMs: number;
  maxInFlight: number;
  retrySweepGraceMs: number;
  longDelayScale: number;
  defaultConcurrency: number;
  now: () => number;
  /** The tenants this instance claims first (all of them when alone). */
  share?: () => Share;
  /** Called once per recorded attempt with its outcome (`complete`, `retrying`, ...). */
  /** After each recorded attempt: its outcome, number and how long the receiver took. */
  onAttempt?: (outcome: string, attempt: number, durationMs: number) => void;
}

/** Parked until tenant.changed names the tenant again (or this long, then checked again). */
const PARK_RECHECK_MS = 3_600_000;
const CLAIM_BATCH = 256;
const SATURATED_BACKOFF_MS = 20;
const RECORD_FLUSH_WINDOW_MS = 25;
const CLAIM_COALESCE_MS = 10;
/** Tenants waiting per instance below which instances claim for every tenant (decision 0180). */
const MIN_TENANTS_PER_SHARE = 4;

/**
 * Runs deliveries out of Postgres. Consumers only insert rows and commit, so a slow receiver
 * never holds a Kafka partition. Each instance claims due rows in batches with a lease (a token
 * and an expiry), takes the batch's tenant slots in Redis (one call per tenant), reserves the
 * batch's lead-views (one reservation per tenant), sends each delivery in its own span of the
 * delivery's trace, and records attempts in groups: the attempt, the new state and the events
 * (through the outbox; a delivered attempt's lead-view among them) in one statement guarded by
 * each delivery's lease token. Views no attempt delivered go back to the quota. A
 * crashed instance's leases expire and another instance picks its rows up: at-least-once, and a
 * repeat carries the same webhook id.
 */
export function createWorker(options: WorkerOptions) {
  const { pool, logger } = options;
  const recorder = createAttemptRecorder({ pool });
  // A claim statement costs about the same for a few rows as for a batch (it also steps over the
  // tenants' leased rows), so a busy worker waits for this much room before claiming again.
  const minRoom = Math.max(1, Math.min(CLAIM_BATCH / 4, Math.floor(options.maxInFlight / 4)));
  /** Claimed deliveries not yet finished, in total and per tenant. */
  let claimed = 0;
  const claimedByTenant = new Map<string, number>();
  const batches = new Set<Promise<void>>();
  const saturated = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let polling = false;
  let again = false;
  let stopped = true;

  function schedule(ms: number) {
    if (stopped) {
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(tick, ms);
  }

  function wake() {
    if (polling) {
      again = true;
      return;
    }
    schedule(0);
  }

  const wakeTimers = new Set<NodeJS.Timeout>();
  /** Polls at `at` (a due time this process learned of), as well as on the regular tick. */
  function wakeAt(at: number) {
    const wait = at - options.now();
    if (wait <= 0) {
      wake();
      return;
    }
    const handle = setTimeout(() => {
      wakeTimers.delete(handle);
      wake();
    }, wait);
    wakeTimers.add(handle);
  }

  async function tick() {
    if (stopped || polling) {
      return;
    }
    polling = true;
    again = false;
    let claimedFull = false;
    try {
      const room = options.maxInFlight - claimed;
      if (room >= minRoom) {
        const limit = Math.min(room, CLAIM_BATCH);
        const share = options.share?.() ?? WHOLE;
        let rows = await claim(limit, share);
        if (rows.length === 0 && claimed === 0 && share.count > 1) {
          // Nothing of its own tenants is due and nothing is in flight: it helps with the
          // others' (a burst that hashed unevenly, a member that left without a word).
          rows = await claim(limit, WHOLE);
        }
        claimedFull = rows.length === limit;
        if (rows.length > 0) {
          hold(rows);
          const batch: Promise<void> = runBatch(rows)
            .catch((error: unknown) => {
              logger.error({ err: error, deliveries: rows.length }, "delivery batch failed");
            })
            .finally(() => batches.delete(batch));
          batches.add(batch);
        }
      }
    } catch (error) {
      logger.warn({ err: error }, "claiming deliveries failed; will retry");
    } finally {
      polling = false;
      schedule(again || claimedFull ? 0 : options.pollMs);
    }
  }

  function hold(rows: readonly ClaimedRow[]) {
    claimed += rows.length;
    for (const row of rows) {
      claimedByTenant.set(row.tenant_id, (claimedByTenant.get(row.tenant_id) ?? 0) + 1);
    }
  }

  const done = new WeakSet<ClaimedRow>();
  /** A claimed row is finished (recorded, released, parked or lost); room for another. */
  function finished(row: ClaimedRow) {
    if (done.has(row)) {
      return;
    }
    done.add(row);
    claimed--;
    unhold(row);
    wakeSoon();
  }

  const unheld = new WeakSet<ClaimedRow>();
  /**
   * The row no longer counts against its tenant's cap in this process's claims: finished, or
   * answered (its slot is free while its record is written).
   */
  function unhold(row: ClaimedRow) {
    if (unheld.has(row)) {
      return;
    }
    unheld.add(row);
    const left = (claimedByTenant.get(row.tenant_id) ?? 1) - 1;
    if (left > 0) {
      claimedByTenant.set(row.tenant_id, left);
    } else {
      claimedByTenant.delete(row.tenant_id);
    }
  }

  let wakeQueued = false;
  /** One claim for everything that finished in this turn, not one per delivery. */
  function wakeSoon() {
    if (wakeQueued || stopped || options.maxInFlight - claimed < minRoom) {
      return;
    }
    wakeQueued = true;
    // A claim costs about the same for one freed slot as for many: the slots freed within a
    // short window share one.
    setTimeout(() => {
      wakeQueued = false;
      wake();
    }, CLAIM_COALESCE_MS);
  }

  /**
   * Leases due rows of the tenants in `share`, at most `cap` per tenant counting the ones this
   * process already holds (slots held by other instances are found at acquire time). Instances
   * claiming disjoint shares do not lease rows for the same slots.
   */
  async function claim(limit: number, share: Share): Promise<ClaimedRow[]> {
    const now = options.now();
    const skip = [...saturated].filter(([, until]) => until > now).map(([tenant]) => tenant);
    for (const [tenant, until] of saturated) {
      if (until <= now) {
        saturated.delete(tenant);
      }
    }
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
         SELECT $9::int > 1 AND count(*) >= $9::int * ${MIN_TENANTS_PER_SHARE} AS yes
           FROM active WHERE tenant_id IS NOT NULL
       ), due AS (
         SELECT x.* FROM active a
         LEFT JOIN tenants t ON t.tenant_id = a.tenant_id
         LEFT JOIN unnest($7::text[], $8::int[]) AS held(tenant_id, n) ON held.tenant_id = a.tenant_id
         CROSS JOIN LATERAL (
           -- ROWS: in the default RANGE frame each rank waits for the last row due at the same
           -- moment, and a batch of matches is inserted due at one moment, so the claim read a
           -- tenant's whole batch to rank its first rows.
           SELECT d.id, d.state, d.endpoint_id, d.tenant_id,
                  row_number() OVER (ORDER BY d.due_at ROWS UNBOUNDED PRECEDING) AS rank
             FROM deliveries d
            WHERE d.tenant_id = a.tenant_id
              AND d.state IN ('pending', 'retrying', 'exhausted', 'parked')
              AND d.due_at <= $1
              AND (d.lease_until IS NULL OR d.lease_until < $1)
              AND (d.state IN ('pending', 'parked')
                   OR (d.state = 'retrying'
                       AND d.due_at <= $1::timestamptz - make_interval(secs => $5 / 1000.0)))
            ORDER BY d.due_at
            -- Candidates go by rank (every tenant's first before any tenant's second), so rows of
            -- a tenant past its share of the candidates (at least 8) are rarely picked; reading
            -- them made each claim read about ten rows for every one it leased. The share is of
            -- the tenants with rows due now: tenants whose deliveries all wait for a later retry
            -- would otherwise shrink a busy tenant's share to the floor.
            LIMIT LEAST(
              GREATEST(GREATEST(COALESCE(t.concurrent_webhooks, $4), 1) - COALESCE(held.n, 0), 0),
              GREATEST(ceil($2 * 4.0 / GREATEST((
                SELECT count(*) FROM active w
                 WHERE w.tenant_id IS NOT NULL
                   AND (NOT (SELECT yes FROM sharded)
                        OR (hashtext(w.tenant_id) & 2147483647) % $9::int = $10::int)
                   AND EXISTS (SELECT FROM deliveries n
                                WHERE n.tenant_id = w.tenant_id
                                  AND n.state IN ('pending', 'retrying', 'exhausted', 'parked')
                                  AND n.due_at <= $1)), 1)), 8))
         ) x
         WHERE a.tenant_id IS NOT NULL AND NOT (a.tenant_id = ANY($3::text[]))
           AND (NOT (SELECT yes FROM sharded)
                OR (hashtext(a.tenant_id) & 2147483647) % $9::int = $10::int)
         UNION ALL
         -- Exhausted deliveries need no slot: they are dead-lettered, not sent.
         SELECT d.id, d.state, d.endpoint_id, d.tenant_id, 0 AS rank FROM deliveries d
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
           SELECT FROM deliveries d
            WHERE d.id = c.id AND d.state = c.state AND d.due_at <= $1
              AND (d.lease_until IS NULL OR d.lease_until < $1)
              FOR UPDATE SKIP LOCKED
         ) locked
         ORDER BY c.rank LIMIT $2
       )
       UPDATE deliveries d
          SET lease_token = gen_random_uuid(),
              lease_until = $1::timestamptz + make_interval(secs => $6 / 1000.0)
         FROM picked
         JOIN endpoints e ON e.id = picked.endpoint_id
         LEFT JOIN tenants t ON t.tenant_id = picked.tenant_id
        WHERE d.id = picked.id
       RETURNING d.id, d.endpoint_id, d.tenant_id, d.watchlist_id, d.match_id, d.folio,
                 d.event_type, d.body, d.state, d.attempts, d.replay_no, d.due_at, d.charged_at,
                 d.lease_token, d.first_attempted_at, d.trace_context, e.url,
                 e.deleted_at AS endpoint_deleted_at, t.tier, t.status, t.lead_views_per_month,
                 t.concurrent_webhooks, to_char(t.billing_anniversary, 'YYYY-MM-DD') AS billing_anniversary`,
      values: [
        new Date(now),
        limit,
        skip,
        options.defaultConcurrency,
        options.retrySweepGraceMs,
        options.leaseMs,
        [...claimedByTenant.keys()],
        [...claimedByTenant.values()],
        share.count,
        share.index,
      ],
    });
    return rows;
  }

  /** Gives claimed rows back without an attempt, due again after `delayMs`. */
  async function release(rows: readonly ClaimedRow[], delayMs: number) {
    if (rows.length === 0) {
      return;
    }
    try {
      await pool.query(
        `UPDATE deliveries d SET lease_token = NULL, lease_until = NULL,
                due_at = GREATEST(d.due_at, $3::timestamptz)
           FROM unnest($1::uuid[], $2::uuid[]) AS r(id, lease_token)
          WHERE d.id = r.id AND d.lease_token = r.lease_token`,
        [
          rows.map((row) => row.id),
          rows.map((row) => row.lease_token),
          new Date(options.now() + delayMs),
        ],
      );
    } finally {
      rows.forEach(finished);
    }
  }

  function park(rows: readonly ClaimedRow[], reason: string, until: Date) {
    return parkEach(
      rows,
      reason,
      rows.map(() => until),
    );
  }

  /** Parks claimed rows with their reason, each due again at its own time. */
  async function parkEach(rows: readonly ClaimedRow[], reason: string, until: readonly Date[]) {
    if (rows.length === 0) {
      return;
    }
    try {
      await pool.query(
        `UPDATE deliveries d SET state = 'parked', parked_reason = $3, due_at = r.due_at,
                lease_token = NULL, lease_until = NULL
           FROM unnest($1::uuid[], $2::uuid[], $4::timestamptz[]) AS r(id, lease_token, due_at)
          WHERE d.id = r.id AND d.lease_token = r.lease_token`,
        [rows.map((row) => row.id), rows.map((row) => row.lease_token), reason, until],
      );
    } finally {
      rows.forEach(finished);
    }
  }

  /**
   * One claimed batch: the rows that need no attempt are settled; the others take their tenants'
   * slots (one call per tenant, pipelined) and their lead-views (one reservation per tenant, one
   * transaction for the batch); then each is sent and recorded on its own. Every row of the batch
   * ends in `finished` exactly once, whatever fails.
   */
  async function runBatch(rows: ClaimedRow[]): Promise<void> {
    const now = options.now();
    const settled: Promise<unknown>[] = [];
    const toParkUnknown: ClaimedRow[] = [];
    const toParkTier: ClaimedRow[] = [];
    const byTenant = new Map<string, ClaimedRow[]>();
    for (const row of rows) {
      if (row.state === "exhausted") {
        settled.push(deadLetter(row, "attempts_exhausted").finally(() => finished(row)));
      } else if (row.endpoint_deleted_at) {
        settled.push(deadLetter(row, "endpoint_removed").finally(() => finished(row)));
      } else if (!row.tier || row.lead_views_per_month === null) {
        toParkUnknown.push(row);
      } else if (!tierOpens(row.tier, "webhooks") || row.status === "cancelled") {
        toParkTier.push(row);
      } else {
        const list = byTenant.get(row.tenant_id) ?? [];
        list.push(row);
        byTenant.set(row.tenant_id, list);
      }
    }
    settled.push(park(toParkUnknown, "tenant_unknown", new Date(now + PARK_RECHECK_MS)));
    settled.push(park(toParkTier, "tier_without_webhooks", new Date(now + PARK_RECHECK_MS)));
    settled.push(deliver([...byTenant.values()]));
    const failures = (await Promise.allSettled(settled)).filter(
      (result) => result.status === "rejected",
    );
    for (const failure of failures) {
      logger.warn({ err: failure.reason }, "settling claimed deliveries failed; leases expire");
    }
  }

  /** Rows grouped by tenant: slots, then lead-views, then the attempts. */
  async function deliver(tenants: ClaimedRow[][]): Promise<void> {
    if (tenants.length === 0) {
      return;
    }
    const all = tenants.flat();
    // Slots and lead-views are asked for at once (one Redis round trip, not two, before a body
    // leaves). The claim leased no more rows than the tenant's free slots as this process knows
    // them, so views reserved for rows that then get no slot are few; they go back.
    const [slotResults, reserved] = await Promise.all([
      Promise.allSettled(tenants.map(acquireSlots)),
      reserveViews(all).then(
        (rows) => ({ ok: true as const, rows }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    ]);
    const slotted = slotResults.flatMap((result) =>
      result.status === "fulfilled" ? result.value : [],
    );
    const slotFailure = slotResults.find((result) => result.status === "rejected");
    if (slotFailure || !reserved.ok) {
      // Slots and views other tenants got in this round go back now rather than when their
      // leases (or the meter's settle window) expire.
      releaseSlots(slotted);
      for (const row of all) {
        settleView(row, false);
      }
      await release(all, 1000).catch(() => {});
      throw slotFailure ? slotFailure.reason : (reserved as { error: unknown }).error;
    }
    const sending = new Set(reserved.rows);
    const ready = slotted.filter((row) => sending.has(row));
    const slottedSet = new Set(slotted);
    // Rows that did not come back from the reservation were parked.
    releaseSlots(slotted.filter((row) => !sending.has(row)));
    const unslotted = reserved.rows.filter((row) => !slottedSet.has(row));
    for (const row of unslotted) {
      settleView(row, false);
    }
    // Not awaited: the slotted rows' sends do not wait on it. Left leased if this fails: due
    // again when the lease expires.
    const givenBack = release(unslotted, 0).catch(() => {});
    await Promise.all(
      ready.map((row) =>
        // The slot bounds the receiver's concurrency: it is free once the receiver answered,
        // not held through the record's write.
        attempt(row, () => releaseSlots([row]))
          .catch(async (error: unknown) => {
            logger.error({ err: error, delivery_id: row.id }, "delivery attempt failed");
            await release([row], 1000).catch(() => {});
          })
          .finally(() => {
            // An attempt that ended before its outcome was recorded delivered nothing.
            settleView(row, false);
            releaseSlots([row]);
            finished(row);
          }),
      ),
    );
    await givenBack;
  }

  /** Takes the tenant's slots for its rows in order; answers the rows that got one. */
  async function acquireSlots(rows: ClaimedRow[]): Promise<ClaimedRow[]> {
    const first = rows[0] as ClaimedRow;
    const cap = Math.max(1, first.concurrent_webhooks ?? options.defaultConcurrency);
    const taken = await options.slots.acquire(
      first.tenant_id,
      rows.map((row) => row.lease_token),
      cap,
    );
    if (taken < rows.length) {
      saturated.set(first.tenant_id, options.now() + SATURATED_BACKOFF_MS);
    }
    return rows.slice(0, taken);
  }

  const slotReleases = new Map<string, string[]>();
  const slotFreed = new WeakSet<ClaimedRow>();
  /** Frees tenant slots (once each) in one call per tenant for everything finished this turn. */
  function releaseSlots(all: readonly ClaimedRow[]) {
    const rows = all.filter((row) => !slotFreed.has(row));
    if (rows.length === 0) {
      return;
    }
    for (const row of rows) {
      slotFreed.add(row);
      unhold(row);
    }
    wakeSoon();
    const wasEmpty = slotReleases.size === 0;
    for (const row of rows) {
      const list = slotReleases.get(row.tenant_id) ?? [];
      list.push(row.lease_token);
      slotReleases.set(row.tenant_id, list);
    }
    if (wasEmpty) {
      setImmediate(() => {
        const pending = [...slotReleases];
        slotReleases.clear();
        for (const [tenantId, members] of pending) {
          // A slot not given back here expires with its lease.
          options.slots.release(tenantId, members).catch(() => {});
        }
      });
    }
  }

  interface Reserved {
    tenantId: string;
    period: { start: Date; end: Date };
    day: string;
    reservation: string;
    covered: ClaimedRow[];
    refused: ClaimedRow[];
    /** Folios whose views this claim records: charged by it, or still unsettled elsewhere. */
    folios: string[];
    /** Attempts not over yet, by folio. */
    open: Map<string, number>;
    /** Folios an attempt delivered: never given back. */
    kept: Set<string>;
  }

  /**
   * One lead-view per delivery, the same rule and atomic reservation as reads: unique per
   * (tenant, folio, UTC day), all-or-nothing against the month's cap. A tenant's uncharged rows
   * of a claim are reserved at once; when the quota cannot cover them all they are reserved one
   * by one, in order, and the ones it cannot cover are parked until the reset.
   */
  async function reserve(rows: ClaimedRow[], at: Date): Promise<Reserved> {
    const first = rows[0] as ClaimedRow;
    const anchor = first.billing_anniversary
      ? new Date(`${first.billing_anniversary}T00:00:00Z`)
      : at;
    const { start, end } = billingPeriodAt(anchor, at);
    const quota = {
      tenantId: first.tenant_id,
      period: { start, end },
      day: utcDay(at),
      // Every call below is one reservation, so whatever it charged can be given back.
      reservation: randomUUID(),
    };
    const cap = first.lead_views_per_month ?? 0;
    const folios = rows.map((row) => row.folio);
    try {
      const whole = await options.meter.reserve({ ...quota, cap, folios });
      if (whole.ok) {
        return {
          ...quota,
          covered: rows,
          refused: [],
          folios: [...whole.charged, ...whole.unsettled],
          open: new Map(),
          kept: new Set(),
        };
      }
      const reserved: Reserved = {
        ...quota,
        covered: [],
        refused: [],
        folios: [],
        open: new Map(),
        kept: new Set(),
      };
      for (const row of rows) {
        const one = await options.meter.reserve({ ...quota, cap, folios: [row.folio] });
        if (one.ok) {
          reserved.covered.push(row);
          reserved.folios.push(...one.charged, ...one.unsettled);
        } else {
          reserved.refused.push(row);
        }
      }
      return reserved;
    } catch (error) {
      // Views reserved before the failure (or by a call whose answer was lost) were never
      // recorded: give them back.
      await options.meter.release({ ...quota, folios }).catch(() => {});
      throw error;
    }
  }

  /**
   * Reserves the lead-views of the rows not charged yet, before any body leaves: a tenant over its
   * quota does not receive the lead (its rows are parked until the reset). Nothing is charged
   * here: a view is recorded with the attempt that delivers it (`record`), and given back when no
   * attempt of its folio in this round delivered (`settleView`). Answers the rows that may be sent.
   */
  async function reserveViews(rows: ClaimedRow[]): Promise<ClaimedRow[]> {
    const uncharged = new Map<string, ClaimedRow[]>();
    for (const row of rows) {
      if (!row.charged_at) {
        const list = uncharged.get(row.tenant_id) ?? [];
        list.push(row);
        uncharged.set(row.tenant_id, list);
      }
    }
    if (uncharged.size === 0) {
      return rows;
    }
    const at = new Date(options.now());
    const settled = await Promise.allSettled(
      [...uncharged.values()].map((tenantRows) => reserve(tenantRows, at)),
    );
    const reservations = settled.flatMap((result) =>
      result.status === "fulfilled" ? [result.value] : [],
    );
    const giveBackAll = () =>
      Promise.all(reservations.map((reserved) => giveBack(reserved, reserved.folios))).catch(
        () => {},
      );
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) {
      // Another tenant's reservation failed: every view reserved here goes back, none sent.
      await giveBackAll();
      throw failed.reason;
    }
    try {
      await parkEach(
        reservations.flatMap((reserved) => reserved.refused),
        "quota_exhausted",
        reservations.flatMap((reserved) => reserved.refused.map(() => reserved.period.end)),
      );
    } catch (error) {
      await giveBackAll();
      throw error;
    }
    const covered = new Set<ClaimedRow>();
    for (const reserved of reservations) {
      const toRecord = new Set(reserved.folios);
      for (const row of reserved.covered) {
        holds.set(row, { reserved, view: toRecord.has(row.folio) });
        reserved.open.set(row.folio, (reserved.open.get(row.folio) ?? 0) + 1);
        covered.add(row);
      }
    }
    return rows.filter((row) => row.charged_at || covered.has(row));
  }

  /** The reservation a claimed row's attempt carries, and whether it records the folio's view. */
  const holds = new WeakMap<ClaimedRow, { reserved: Reserved; view: boolean }>();

  /**
   * A row's attempt is over. A folio's reservation is given back once every attempt of the round
   * that carried it is over and none delivered it; a delivered one keeps it (its view was written
   * with the attempt, or, when that write's outcome is unknown, will be by the redelivery).
   */
  function settleView(row: ClaimedRow, delivered: boolean) {
    const hold = holds.get(row);
    if (!hold) {
      return;
    }
    holds.delete(row);
    const { reserved } = hold;
    if (delivered) {
      reserved.kept.add(row.folio);
    }
    const left = (reserved.open.get(row.folio) ?? 1) - 1;
    if (left > 0) {
      reserved.open.set(row.folio, left);
      return;
    }
    reserved.open.delete(row.folio);
    if (hold.view && !reserved.kept.has(row.folio)) {
      queueGiveBack(reserved, row.folio);
    }
  }

  const giveBacks = new Map<Reserved, string[]>();
  /** Gives back views in one call per reservation for everything settled in this turn. */
  function queueGiveBack(reserved: Reserved, folio: string) {
    const wasEmpty = giveBacks.size === 0;
    giveBacks.set(reserved, [...(giveBacks.get(reserved) ?? []), folio]);
    if (wasEmpty) {
      setImmediate(() => {
        const pending = [...giveBacks];
        giveBacks.clear();
        for (const [owner, folios] of pending) {
          giveBack(owner, folios).catch((error: unknown) => {
            logger.warn({ err: error }, "giving back undelivered lead-views failed");
          });
        }
      });
    }
  }

  function giveBack(reserved: Reserved, folios: readonly string[]) {
    return options.meter.release({
      tenantId: reserved.tenantId,
      period: reserved.period,
      day: reserved.day,
      reservation: reserved.reservation,
      folios,
    });
  }

  /** The `leadview.recorded` a delivered attempt writes with its record, if it carries one. */
  function viewEvent(row: ClaimedRow, at: Date, trace: Record<string, string>) {
    const hold = holds.get(row);
    if (!hold?.view) {
      return undefined;
    }
    const view: LeadViewRecorded = {
      tenant_id: row.tenant_id,
      folio: row.folio,
      day: hold.reserved.day,
      billing_period_start: utcDay(hold.reserved.period.start),
      surface: "webhook",
      request_id: row.id,
      key_id: null,
      member_id: null,
      recorded_at: at.toISOString(),
    };
    return { ...outboxEvent(row.id, contracts.leadViewRecorded, view, trace), view: true };
  }

  /**
   * One attempt in its own span, a child of the trace the delivery was created in (the
   * `match.found` record's); the receiver gets that span's `traceparent`, and the events the
   * attempt records are published in it.
   */
  function attempt(row: ClaimedRow, answered: () => void): Promise<void> {
    return withExtractedContext(row.trace_context ?? {}, () =>
      inSpan(
        "webhook POST",
        {
          "webhook.id": row.id,
          "webhook.endpoint_id": row.endpoint_id,
          "webhook.attempt": row.attempts + 1,
          "webhook.replay": row.replay_no,
          "th.tenant_id": row.tenant_id,
        },
        async (span) => {
          const secret = await options.secrets.signingSecret(row.endpoint_id);
          const attemptNo = row.attempts + 1;
          const startedAt = new Date(options.now());
          const signature = signatureHeader(
            row.body,
            secret,
            Math.floor(startedAt.getTime() / 1000),
          );
          const trace = traceContextOf();
          const result = await options.sender
            .send(row.url, row.body, {
              ...trace,
              "content-type": "application/json",
              "user-agent": USER_AGENT,
              "x-flpf-signature": signature,
              "x-flpf-event-type": row.event_type,
              "x-flpf-webhook-id": row.id,
            })
            .finally(answered);
          if (result.kind === "response") {
            span.setAttribute("http.response.status_code", result.status);
          } else {
            span.setAttribute("webhook.failure", result.failure);
          }
          await record(row, attemptNo, startedAt, result, trace);
        },
      ),
    );
  }

  async function record(
    row: ClaimedRow,
    attemptNo: number,
    at: Date,
    result: AttemptResult,
    trace: Record<string, string>,
  ) {
    const verdict = verdictOf(result);
    const now = options.now();
    const status = result.kind === "response" ? result.status : null;
    const failure: FailureKind | null =
      result.kind === "failure" ? result.failure : verdict === "complete" ? null : "http_status";
    const error =
      result.kind === "failure"
        ? result.error
        : verdict === "complete"
          ? null
          : `receiver answered ${result.status}`;
    const firstAttemptedAt = row.first_attempted_at ?? at;
    let state: AttemptRecord["state"];
    let dueAt: Date | null = null;
    let deadLetterReason: DeadLetterReason | null = null;
    if (verdict === "complete") {
      state = "complete";
    } else if (verdict === "dead_letter") {
      state = "dead_letter";
      deadLetterReason = result.kind === "failure" ? "blocked_address" : "rejected_by_receiver";
    } else if (attemptNo < MAX_ATTEMPTS) {
      state = "retrying";
      dueAt = new Date(now + delayBeforeAttempt(attemptNo + 1, options.longDelayScale));
    } else {
      state = "exhausted";
      dueAt = new Date(now + scaleLong(DEAD_LETTER_AFTER_MS, options.longDelayScale));
    }
    const attempted: DeliveryAttempted = {
      ...deliveryOf(row),
      attempt: attemptNo,
      replay_no: row.replay_no,
      attempted_at: at.toISOString(),
      duration_ms: result.durationMs,
      status_code: status,
      failure,
      error,
      state: state === "exhausted" ? "dead_letter" : state,
      next_attempt_at: state === "retrying" && dueAt ? dueAt.toISOString() : null,
    };
    const events = [outboxEvent(row.id, contracts.deliveryAttempted, attempted, trace)];
    if (state === "retrying" && dueAt) {
      const retry: DeliveryRetry = {
        ...deliveryOf(row),
        event_type: row.event_type,
        payload_json: row.body,
        attempt: attemptNo + 1,
        replay_no: row.replay_no,
        due_at: dueAt.toISOString(),
        first_attempted_at: firstAttemptedAt.toISOString(),
        last_status_code: status,
        last_failure: failure,
        last_error: error,
      };
      events.push(outboxEvent(row.id, retryStage(attemptNo + 1).contract, retry, trace));
    }
    if (state === "dead_letter" && deadLetterReason) {
      const dead = deadLetterEvent(row, deadLetterReason, {
        attempts: attemptNo,
        status,
        failure,
        error,
        firstAttemptedAt,
        lastAttemptedAt: at,
        now,
      });
      events.push(outboxEvent(row.id, contracts.deliveryDeadLetter, dead, trace));
    }
    const view = state === "complete" ? viewEvent(row, new Date(now), trace) : undefined;
    if (view) {
      events.push(view);
    }
    let committed: boolean;
    try {
      committed = await recorder.record({
        id: row.id,
        leaseToken: row.lease_token,
        replayNo: row.replay_no,
        attempt: attemptNo,
        attemptedAt: at,
        durationMs: result.durationMs,
        statusCode: status,
        failure,
        error,
        excerpt: result.kind === "response" ? result.excerpt : null,
        state,
        dueAt,
        deadLetterReason,
        recordedAt: new Date(now),
        holdUntil: new Date(now + HOLD_MS),
        charge: state === "complete" && holds.has(row),
        events,
      });
    } catch (error) {
      // Whether a delivered attempt's record committed is unknown: its view is kept reserved,
      // and a redelivery (same webhook id) finds it unsettled and records it.
      settleView(row, state === "complete");
      throw error;
    }
    settleView(row, committed && state === "complete");
    if (committed) {
      options.onAttempt?.(state, attemptNo, result.durationMs);
      flushShortly();
      if (state === "exhausted" && dueAt) {
        wakeAt(dueAt.getTime());
      }
    } else {
      logger.warn({ delivery_id: row.id }, "lease lost before the attempt was recorded");
    }
  }

  async function deadLetter(row: ClaimedRow, reason: DeadLetterReason) {
    const now = options.now();
    await withExtractedContext(row.trace_context ?? {}, () =>
      runInTransaction(pool, async (client) => {
        const { rows } = await client.query<{
          attempts: number;
          last_status_code: number | null;
          last_failure: FailureKind | null;
          last_error: string | null;
          first_attempted_at: Date | null;
          last_attempted_at: Date | null;
        }>(
          `UPDATE deliveries SET state = 'dead_letter', dead_lettered_at = $3, dead_letter_reason = $4,
                  hold_until = $5, lease_token = NULL, lease_until = NULL
            WHERE id = $1 AND lease_token = $2
            RETURNING attempts, last_status_code, last_failure, last_error, first_attempted_at,
                      last_attempted_at`,
          [row.id, row.lease_token, new Date(now), reason, new Date(now + HOLD_MS)],
        );
        const updated = rows[0];
        if (!updated) {
          return;
        }
        await enqueueEvent(
          client,
          contracts.deliveryDeadLetter,
          deadLetterEvent(row, reason, {
            attempts: updated.attempts,
            status: updated.last_status_code,
            failure: updated.last_failure,
            error: updated.last_error,
            firstAttemptedAt: updated.first_attempted_at ?? new Date(now),
            lastAttemptedAt: updated.last_attempted_at ?? new Date(now),
            now,
          }),
        );
      }),
    );
    flushSoon();
  }

  function deadLetterEvent(
    row: ClaimedRow,
    reason: DeadLetterReason,
    facts: {
      attempts: number;
      status: number | null;
      failure: FailureKind | null;
      error: string | null;
      firstAttemptedAt: Date;
      lastAttemptedAt: Date;
      now: number;
    },
  ): DeliveryDeadLetter {
    return {
      ...deliveryOf(row),
      event_type: row.event_type,
      payload_json: row.body,
      attempts: facts.attempts,
      replay_no: row.replay_no,
      reason,
      last_status_code: facts.status,
      last_failure: facts.failure,
      last_error: facts.error,
      first_attempted_at: facts.firstAttemptedAt.toISOString(),
      last_attempted_at: facts.lastAttemptedAt.toISOString(),
      dead_lettered_at: new Date(facts.now).toISOString(),
      hold_until: new Date(facts.now + HOLD_MS).toISOString(),
    };
  }

  let flushQueued = false;
  /** Publishes the outbox now: a charge's lead-views, a dead letter. */
  function flushSoon() {
    if (flushQueued) {
      return;
    }
    flushQueued = true;
    setImmediate(() => {
      flushQueued = false;
      flush();
    });
  }

  let flushTimer: NodeJS.Timeout | undefined;
  /**
   * Publishes recorded attempts' events within a short window: attempts finish continuously, and
   * a drain per group would publish in many small produce requests (each costs about the same
   * whatever its size). The window is far inside the retry hand-off lead.
   */
  function flushShortly() {
    if (flushTimer || flushQueued) {
      return;
    }
    flushTimer = setTimeout(() => {
      flushTimer = undefined;
      flush();
    }, RECORD_FLUSH_WINDOW_MS);
  }

  function flush() {
    options.relay.flush().catch((error: unknown) => {
      logger.warn({ err: error }, "outbox flush failed; the relay retries");
    });
  }

  return {
    wake,
    wakeAt,
    start() {
      stopped = false;
      schedule(0);
    },
    /** Stops claiming; waits (at most `graceMs`) for attempts in flight to be recorded. */
    async stop(graceMs = 15_000) {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(flushTimer);
      flushTimer = undefined;
      for (const handle of wakeTimers) {
        clearTimeout(handle);
      }
      await Promise.race([
        Promise.allSettled([...batches]),
        new Promise((resolve) => setTimeout(resolve, graceMs)),
      ]);
    },
    inFlight: () => claimed,
    instanceId: randomUUID(),
  };
}

export type Worker = ReturnType<typeof createWorker>;
