import type { LeadViewRecorded, LeadViewVoided } from "@th/contracts";
import { inTransaction, type Pool, type PoolClient } from "@th/db";
import { ensureLeadViewMonthsOf, isMissingPartition } from "./partitions.ts";

/** Where a lead-view event sits in leadview.recorded. */
interface EventPosition {
  partition: number;
  offset: string;
}

export interface DailyLeadViews {
  day: string;
  lead_views: number;
}

/**
 * Records a batch's lead-views in one call (migration 20261229000000): rows go in in log order,
 * so the first event of a (tenant, day, folio) wins as it does one at a time, a key twice in the
 * batch is inserted once, each period's counter moves by the rows actually inserted, and an event
 * whose read was voided is skipped. Only when some event was not inserted does it look for
 * runners-up: events that lost to another request's event of their (tenant, day, folio), kept in
 * case the charged one is voided. It takes the tenant buckets' locks shared first (see below).
 */
const RECORD_BATCH_SQL =
  "SELECT record_lead_views($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) AS inserted";

/**
 * Recording and voiding one tenant's views are serialised, so neither misses the other: a record
 * takes its tenants' buckets shared (batches record side by side), a void takes them exclusive.
 * Buckets, not tenants, so that a batch of many tenants holds a bounded number of locks.
 */
const LOCK_SPACE = 190_001;
/** A power of two: a bucket is the hash's low bits. */
const LOCK_BUCKETS = 64;
const lockBucketsExclusive = `
SELECT pg_advisory_xact_lock(${LOCK_SPACE}, b)
  FROM (SELECT DISTINCT hashtext(t) & ${LOCK_BUCKETS - 1} AS b FROM unnest($1::text[]) AS t
        ORDER BY 1) AS buckets`;

/**
 * Voids one read's views of one (tenant, day): each voided folio's charge is taken back, unless
 * another request's event of it was recorded too, which is then charged in its place.
 */
async function voidRead(client: PoolClient, event: LeadViewVoided): Promise<number> {
  const key = [event.tenant_id, event.day, event.folios, event.request_id];
  await client.query(
    `INSERT INTO lead_view_voids (tenant_id, day, folio, request_id, voided_at)
     SELECT $1, $2, folio, $4, $5 FROM unnest($3::text[]) AS folio
     ON CONFLICT DO NOTHING`,
    [...key, event.voided_at],
  );
  await client.query(
    `DELETE FROM lead_view_runners_up
      WHERE tenant_id = $1 AND day = $2 AND folio = ANY($3) AND request_id = $4`,
    key,
  );
  // The runner-up of each voided charge takes its place; what has none is uncharged.
  await client.query(
    `WITH voided AS (
       SELECT folio FROM lead_views
        WHERE tenant_id = $1 AND day = $2 AND folio = ANY($3) AND request_id = $4 FOR UPDATE),
     next AS (
       DELETE FROM lead_view_runners_up r USING (
         SELECT DISTINCT ON (r2.folio) r2.folio, r2.request_id FROM lead_view_runners_up r2
           JOIN voided USING (folio)
          WHERE r2.tenant_id = $1 AND r2.day = $2
          ORDER BY r2.folio, r2.source_partition, r2.source_offset) AS first
        WHERE r.tenant_id = $1 AND r.day = $2 AND r.folio = first.folio
          AND r.request_id = first.request_id
       RETURNING r.*)
     UPDATE lead_views l
        SET billing_period_start = next.billing_period_start, surface = next.surface,
            request_id = next.request_id, key_id = next.key_id, member_id = next.member_id,
            recorded_at = next.recorded_at, source_partition = next.source_partition,
            source_offset = next.source_offset, ledgered_at = now()
       FROM next
      WHERE l.tenant_id = $1 AND l.day = $2 AND l.folio = next.folio`,
    key,
  );
  const { rows } = await client.query<{ count: number }>(
    `WITH removed AS (
       DELETE FROM lead_views
        WHERE tenant_id = $1 AND day = $2 AND folio = ANY($3) AND request_id = $4
       RETURNING billing_period_start)
     UPDATE period_usage u SET lead_views = u.lead_views - n.count
       FROM (SELECT billing_period_start, count(*)::int AS count FROM removed GROUP BY 1) AS n
      WHERE u.tenant_id = $1 AND u.period_start = n.billing_period_start
     RETURNING n.count`,
    key,
  );
  return rows.reduce((sum, row) => sum + row.count, 0);
}

type PositionedView = { view: LeadViewRecorded; position: EventPosition };

/**
 * Writes the views in one call, which is its own transaction. A view of a month no partition of
 * lead_views takes yet fails the call: the month's partition is created and the call made again,
 * so a batch is never set aside for want of one.
 */
async function writeViews(pool: Pool, views: readonly PositionedView[]): Promise<void> {
  try {
    await recordCall(pool, views);
  } catch (error) {
    if (!isMissingPartition(error)) {
      throw error;
    }
    // Writers that find the month missing together all create it; the kit counts the ones that
    // lose the race as done, so an error here is a real one.
    await ensureLeadViewMonthsOf(
      pool,
      views.map(({ view }) => view.day),
    );
    await recordCall(pool, views);
  }
}

async function recordCall(pool: Pool, views: readonly PositionedView[]): Promise<void> {
  const values = [
    views.map(({ view }) => view.tenant_id),
    views.map(({ view }) => view.day),
    views.map(({ view }) => view.folio),
    views.map(({ view }) => view.billing_period_start),
    views.map(({ view }) => view.surface),
    views.map(({ view }) => view.request_id),
    views.map(({ view }) => view.key_id),
    views.map(({ view }) => view.member_id),
    views.map(({ view }) => view.recorded_at),
    views.map(({ position }) => position.partition),
    views.map(({ position }) => position.offset),
  ];
  await pool.query({
    name: "quota-ledger.record-batch",
    text: RECORD_BATCH_SQL,
    values: [...values, LOCK_SPACE, LOCK_BUCKETS],
  });
}

/**
 * The batches of several partitions handled at the same moment (the consumer runs partitions
 * side by side) wait for the event loop's check phase and go to Postgres as one call: the call,
 * not the row, is most of a small batch's cost. Each partition's views keep their order, and a
 * (tenant, day, folio) is only ever in one partition, so the merged batch decides as each would.
 * A failed call fails every batch in it, each then retried as the consumer retries it.
 */
function coalescedWrites(pool: Pool) {
  let queued: {
    views: readonly PositionedView[];
    done: () => void;
    failed: (e: unknown) => void;
  }[] = [];
  function flush(): void {
    const batch = queued;
    queued = [];
    writeViews(
      pool,
      batch.flatMap((entry) => entry.views),
    ).then(
      () => {
        for (const entry of batch) {
          entry.done();
        }
      },
      (error: unknown) => {
        for (const entry of batch) {
          entry.failed(error);
        }
      },
    );
  }
  return (views: readonly PositionedView[]): Promise<void> =>
    new Promise((done, failed) => {
      if (queued.length === 0) {
        setImmediate(flush);
      }
      queued.push({ views, done, failed });
    });
}

export function createLedger(pool: Pool) {
  const write = coalescedWrites(pool);
  return {
    /** Records the lead-views of one batch at once, in log order. */
    async recordBatch(views: readonly PositionedView[]): Promise<void> {
      if (views.length === 0) {
        return;
      }
      await write(views);
    },

    /**
     * Applies a batch of voids: each is idempotent, and a void read before the views it names
     * keeps them from ever being charged. Answers how many charged views were taken back.
     */
    async voidBatch(events: readonly LeadViewVoided[]): Promise<number> {
      if (events.length === 0) {
        return 0;
      }
      return inTransaction(pool, async (client) => {
        await client.query(lockBucketsExclusive, [events.map((event) => event.tenant_id)]);
        let uncharged = 0;
        for (const event of events) {
          uncharged += await voidRead(client, event);
        }
        return uncharged;
      });
    },

    /** What the gateway's meter seeds Redis with: the period's count and today's folios. */
    async seedFigures(
      tenantId: string,
      periodStart: string,
      day: string,
    ): Promise<{ used: number; foliosToday: string[] }> {
      const [usage, folios] = await Promise.all([
        pool.query<{ lead_views: number }>(
          "SELECT lead_views FROM period_usage WHERE tenant_id = $1 AND period_start = $2",
          [tenantId, periodStart],
        ),
        pool.query<{ folio: string }>(
          "SELECT folio FROM lead_views WHERE tenant_id = $1 AND day = $2 ORDER BY folio",
          [tenantId, day],
        ),
      ]);
      return {
        used: usage.rows[0]?.lead_views ?? 0,
        foliosToday: folios.rows.map((row) => row.folio),
      };
    },

    async periodUsage(
      tenantId: string,
      periodStart: string,
    ): Promise<{ used: number; daily: DailyLeadViews[] }> {
      const [usage, daily] = await Promise.all([
        pool.query<{ lead_views: number }>(
          "SELECT lead_views FROM period_usage WHERE tenant_id = $1 AND period_start = $2",
          [tenantId, periodStart],
        ),
        pool.query<DailyLeadViews>(
          `SELECT to_char(day, 'YYYY-MM-DD') AS day, count(*)::int AS lead_views
           FROM lead_views WHERE tenant_id = $1 AND billing_period_start = $2
           GROUP BY day ORDER BY day`,
          [tenantId, periodStart],
        ),
      ]);
      return { used: usage.rows[0]?.lead_views ?? 0, daily: daily.rows };
    },
  };
}

export type Ledger = ReturnType<typeof createLedger>;
