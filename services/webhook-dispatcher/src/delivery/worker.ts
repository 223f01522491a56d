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
import { type Pool, type PoolClient, inTransaction as runInTransaction } from "@th/db";
import type { LeadViewMeter } from "@th/quota";
import { enqueueEvent, type OutboxRelay } from "@th/service-kit";
import type { Logger } from "@th/telemetry";
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
import type { TenantSlots } from "./concurrency.ts";
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
  url: string;
  endpoint_deleted_at: Date | null;
  tier: Tier | null;
  status: string | null;
  lead_views_per_month: number | null;
  concurrent_webhooks: number | null;
  billing_anniversary: string | null;
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
  /** Called once per recorded attempt with its outcome (`complete`, `retrying`, ...). */
  onAttempt?: (outcome: string, attempt: number) => void;
}

/** Parked until tenant.changed names the tenant again (or this long, then checked again). */
const PARK_RECHECK_MS = 3_600_000;
const CLAIM_BATCH = 200;
const SATURATED_BACKOFF_MS = 20;

/**
 * Runs deliveries out of Postgres. Consumers only insert rows and commit, so a slow receiver
 * never holds a Kafka partition. Each instance claims due rows with a lease (a token and an
 * expiry), takes a tenant slot in Redis before each attempt, sends, and records the attempt, the
 * new state and the events (through the outbox) in one transaction guarded by its lease token.
 * A crashed instance's leases expire and another instance picks its rows up: at-least-once, and a
 * repeat carries the same webhook id.
 */
export function createWorker(options: WorkerOptions) {
  const { pool, logger } = options;
  const inFlight = new Set<Promise<void>>();
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
      const room = options.maxInFlight - inFlight.size;
      if (room > 0) {
        const rows = await claim(Math.min(room, CLAIM_BATCH));
        claimedFull = rows.length === Math.min(room, CLAIM_BATCH);
        for (const row of rows) {
          const work: Promise<void> = run(row)
            .catch((error: unknown) => {
              logger.error({ err: error, delivery_id: row.id }, "delivery run failed");
              return release(row, 1000).catch(() => {});
            })
            .finally(() => {
              inFlight.delete(work);
              if (inFlight.size === options.maxInFlight - 1) {
                wake();
              }
            });
          inFlight.add(work);
        }
      }
    } catch (error) {
      logger.warn({ err: error }, "claiming deliveries failed; will retry");
    } finally {
      polling = false;
      schedule(again || claimedFull ? 0 : options.pollMs);
    }
  }

  async function claim(limit: number): Promise<ClaimedRow[]> {
    const now = options.now();
    const skip = [...saturated].filter(([, until]) => until > now).map(([tenant]) => tenant);
    for (const [tenant, until] of saturated) {
      if (until <= now) {
        saturated.delete(tenant);
      }
    }
    const { rows } = await pool.query<ClaimedRow>(
      `WITH due AS (
         SELECT d.id, d.state,
                row_number() OVER (PARTITION BY d.tenant_id ORDER BY d.due_at) AS rank,
                COALESCE(t.concurrent_webhooks, $4) AS cap,
                e.url, e.deleted_at AS endpoint_deleted_at,
                t.tier, t.status, t.lead_views_per_month, t.concurrent_webhooks,
                to_char(t.billing_anniversary, 'YYYY-MM-DD') AS billing_anniversary
         FROM deliveries d
         JOIN endpoints e ON e.id = d.endpoint_id
         LEFT JOIN tenants t ON t.tenant_id = d.tenant_id
         WHERE d.due_at <= $1
           AND (d.lease_until IS NULL OR d.lease_until < $1)
           AND (d.state IN ('pending', 'parked', 'exhausted')
                OR (d.state = 'retrying'
                    AND d.due_at <= $1::timestamptz - make_interval(secs => $5 / 1000.0)))
           AND NOT (d.tenant_id = ANY($3::text[]))
       ), picked AS (
         SELECT * FROM due WHERE rank <= GREATEST(cap, 1) OR state = 'exhausted'
         ORDER BY rank LIMIT $2
       )
       UPDATE deliveries d
          SET lease_token = gen_random_uuid(),
              lease_until = $1::timestamptz + make_interval(secs => $6 / 1000.0)
         FROM picked
        WHERE d.id = picked.id
          AND d.state = picked.state AND d.due_at <= $1
          AND (d.lease_until IS NULL OR d.lease_until < $1)
       RETURNING d.id, d.endpoint_id, d.tenant_id, d.watchlist_id, d.match_id, d.folio,
                 d.event_type, d.body, d.state, d.attempts, d.replay_no, d.due_at, d.charged_at,
                 d.lease_token, d.first_attempted_at, picked.url, picked.endpoint_deleted_at,
                 picked.tier, picked.status, picked.lead_views_per_month,
                 picked.concurrent_webhooks, picked.billing_anniversary`,
      [
        new Date(now),
        limit,
        skip,
        options.defaultConcurrency,
        options.retrySweepGraceMs,
        options.leaseMs,
      ],
    );
    return rows;
  }

  /** Gives a claimed row back without an attempt, due again after `delayMs`. */
  async function release(row: ClaimedRow, delayMs: number) {
    await pool.query(
      `UPDATE deliveries SET lease_token = NULL, lease_until = NULL,
              due_at = GREATEST(due_at, $3::timestamptz)
        WHERE id = $1 AND lease_token = $2`,
      [row.id, row.lease_token, new Date(options.now() + delayMs)],
    );
  }

  async function park(row: ClaimedRow, reason: string, until: Date) {
    await pool.query(
      `UPDATE deliveries SET state = 'parked', parked_reason = $3, due_at = $4,
              lease_token = NULL, lease_until = NULL
        WHERE id = $1 AND lease_token = $2`,
      [row.id, row.lease_token, reason, until],
    );
  }

  async function run(row: ClaimedRow): Promise<void> {
    if (row.state === "exhausted") {
      await deadLetter(row, "attempts_exhausted");
      return;
    }
    if (row.endpoint_deleted_at) {
      await deadLetter(row, "endpoint_removed");
      return;
    }
    const now = options.now();
    if (!row.tier || row.lead_views_per_month === null) {
      await park(row, "tenant_unknown", new Date(now + PARK_RECHECK_MS));
      return;
    }
    if (!tierOpens(row.tier, "webhooks") || row.status === "cancelled") {
      await park(row, "tier_without_webhooks", new Date(now + PARK_RECHECK_MS));
      return;
    }
    const cap = Math.max(1, row.concurrent_webhooks ?? options.defaultConcurrency);
    if (!(await options.slots.acquire(row.tenant_id, row.lease_token, cap))) {
      saturated.set(row.tenant_id, options.now() + SATURATED_BACKOFF_MS);
      await release(row, 0);
      return;
    }
    try {
      if (!row.charged_at) {
        const charged = await charge(row);
        if (!charged) {
          return;
        }
      }
      await attempt(row);
    } finally {
      await options.slots.release(row.tenant_id, row.lease_token).catch(() => {});
    }
  }

  /**
   * One lead-view per delivery, the same rule and atomic reservation as reads: unique per
   * (tenant, folio, UTC day), all-or-nothing against the month's cap, recorded on
   * `leadview.recorded` (through the outbox, in the transaction that marks the delivery charged)
   * before the body leaves. When the quota cannot cover it the delivery is parked until the reset.
   */
  async function charge(row: ClaimedRow): Promise<boolean> {
    const at = new Date(options.now());
    const anchor = row.billing_anniversary ? new Date(`${row.billing_anniversary}T00:00:00Z`) : at;
    const period = billingPeriodAt(anchor, at);
    const day = at.toISOString().slice(0, 10);
    const reservation = await options.meter.reserve({
      tenantId: row.tenant_id,
      cap: row.lead_views_per_month ?? 0,
      period: { start: period.start, end: period.end },
      day,
      folios: [row.folio],
    });
    if (!reservation.ok) {
      await park(row, "quota_exhausted", period.end);
      return false;
    }
    try {
      await inTransaction(async (client) => {
        const updated = await client.query(
          "UPDATE deliveries SET charged_at = $3 WHERE id = $1 AND lease_token = $2",
          [row.id, row.lease_token, at],
        );
        if (updated.rowCount !== 1) {
          throw new LeaseLost();
        }
        for (const folio of reservation.charged) {
          const view: LeadViewRecorded = {
            tenant_id: row.tenant_id,
            folio,
            day,
            billing_period_start: period.start.toISOString().slice(0, 10),
            surface: "webhook",
            request_id: row.id,
            key_id: null,
            member_id: null,
            recorded_at: at.toISOString(),
          };
          await enqueueEvent(client, contracts.leadViewRecorded, view);
        }
      });
    } catch (error) {
      await options.meter.release({
        tenantId: row.tenant_id,
        period: { start: period.start, end: period.end },
        day,
        folios: reservation.charged,
      });
      if (error instanceof LeaseLost) {
        return false;
      }
      throw error;
    }
    flushSoon();
    return true;
  }

  async function attempt(row: ClaimedRow): Promise<void> {
    const secrets = await options.secrets.signingSecrets(row.endpoint_id);
    const attemptNo = row.attempts + 1;
    const startedAt = new Date(options.now());
    const signature = signatureHeader(row.body, secrets, Math.floor(startedAt.getTime() / 1000));
    const result = await options.sender.send(row.url, row.body, {
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      "x-flpf-signature": signature,
      "x-flpf-event-type": row.event_type,
      "x-flpf-webhook-id": row.id,
    });
    await record(row, attemptNo, startedAt, result);
  }

  async function record(row: ClaimedRow, attemptNo: number, at: Date, result: AttemptResult) {
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
    let state: "complete" | "retrying" | "exhausted" | "dead_letter";
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
    const committed = await inTransaction(async (client) => {
      const updated = await client.query(
        `UPDATE deliveries SET
           state = $3, attempts = $4, first_attempted_at = COALESCE(first_attempted_at, $5),
           last_attempted_at = $5, last_status_code = $6, last_failure = $7, last_error = $8,
           due_at = COALESCE($9, due_at), lease_token = NULL, lease_until = NULL,
           completed_at = CASE WHEN $3 = 'complete' THEN $10::timestamptz ELSE completed_at END,
           dead_lettered_at = CASE WHEN $3 = 'dead_letter' THEN $10::timestamptz ELSE dead_lettered_at END,
           dead_letter_reason = CASE WHEN $3 = 'dead_letter' THEN $11 ELSE dead_letter_reason END,
           hold_until = CASE WHEN $3 IN ('complete', 'dead_letter') THEN $12::timestamptz ELSE hold_until END,
           parked_reason = NULL
         WHERE id = $1 AND lease_token = $2`,
        [
          row.id,
          row.lease_token,
          state,
          attemptNo,
          at,
          status,
          failure,
          error,
          dueAt,
          new Date(now),
          deadLetterReason,
          new Date(now + HOLD_MS),
        ],
      );
      if (updated.rowCount !== 1) {
        return false;
      }
      await client.query(
        `INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, duration_ms,
                               status_code, failure, error, response_excerpt, state)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
        [
          row.id,
          row.replay_no,
          attemptNo,
          at,
          result.durationMs,
          status,
          failure,
          error,
          result.kind === "response" ? result.excerpt : null,
          state,
        ],
      );
      const attempted: DeliveryAttempted = {
        delivery_id: row.id,
        endpoint_id: row.endpoint_id,
        tenant_id: row.tenant_id,
        watchlist_id: row.watchlist_id,
        match_id: row.match_id,
        folio: row.folio,
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
      await enqueueEvent(client, contracts.deliveryAttempted, attempted);
      if (state === "retrying" && dueAt) {
        const retry: DeliveryRetry = {
          delivery_id: row.id,
          endpoint_id: row.endpoint_id,
          tenant_id: row.tenant_id,
          watchlist_id: row.watchlist_id,
          match_id: row.match_id,
          folio: row.folio,
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
        await enqueueEvent(client, retryStage(attemptNo + 1).contract, retry);
      }
      if (state === "dead_letter" && deadLetterReason) {
        await enqueueEvent(
          client,
          contracts.deliveryDeadLetter,
          deadLetterEvent(row, deadLetterReason, {
            attempts: attemptNo,
            status,
            failure,
            error,
            firstAttemptedAt,
            lastAttemptedAt: at,
            now,
          }),
        );
      }
      return true;
    });
    if (committed) {
      options.onAttempt?.(state, attemptNo);
      flushSoon();
      if (state === "exhausted" && dueAt) {
        wakeAt(dueAt.getTime());
      }
    } else {
      logger.warn({ delivery_id: row.id }, "lease lost before the attempt was recorded");
    }
  }

  async function deadLetter(row: ClaimedRow, reason: DeadLetterReason) {
    const now = options.now();
    await inTransaction(async (client) => {
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
    });
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
      delivery_id: row.id,
      endpoint_id: row.endpoint_id,
      tenant_id: row.tenant_id,
      watchlist_id: row.watchlist_id,
      match_id: row.match_id,
      folio: row.folio,
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
  function flushSoon() {
    if (flushQueued) {
      return;
    }
    flushQueued = true;
    setImmediate(() => {
      flushQueued = false;
      options.relay.flush().catch((error: unknown) => {
        logger.warn({ err: error }, "outbox flush failed; the relay retries");
      });
    });
  }

  const inTransaction = <T>(work: (client: PoolClient) => Promise<T>) =>
    runInTransaction(pool, work);

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
      for (const handle of wakeTimers) {
        clearTimeout(handle);
      }
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise((resolve) => setTimeout(resolve, graceMs)),
      ]);
    },
    inFlight: () => inFlight.size,
    instanceId: randomUUID(),
  };
}

class LeaseLost extends Error {}

export type Worker = ReturnType<typeof createWorker>;
