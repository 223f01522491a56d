import { once } from "node:events";
import type { LeadViewRecorded } from "@th/contracts";
import {
  copyFromStdin,
  copyLines,
  copyText,
  inTransaction,
  needsCopyEscape,
  type Pool,
  type PoolClient,
} from "@th/db";
import { ensureLeadViewMonthsOf } from "./partitions.ts";

/** A replayed lead-view and where it sits in the log (a replayed record is one as it is). */
export interface ShadowRow {
  value: LeadViewRecorded;
  partition: number;
  offset: string;
}

/**
 * COPY text format, built by string concatenation: no per-value parameter serialisation (the
 * array literals of an unnest insert cost more than the rows themselves) and no statement to plan.
 */
const COPY_SQL = `COPY lead_views_shadow (tenant_id, day, folio, billing_period_start, surface,
  request_id, key_id, member_id, recorded_at, source_partition, source_offset) FROM STDIN`;

/**
 * Bytes a lane buffers before handing them to its connection while the replay goes on. Each
 * line goes straight into the buffer: a string holding a chunk's worth of lines outlived several
 * young-generation collections, and copying it there cost more than building it.
 */
const LANE_CHUNK = 256 << 10;

/**
 * Bytes a lane may have queued for its connection before the replay waits for it: a few fetched
 * slices of COPY text, so the next slice is read and decoded while Postgres stores the last one.
 * Waiting whenever more than the stream's default 16 KiB was unsent left the reader idle while
 * Postgres parsed the chunk before.
 */
const LANE_BACKLOG = 64 * LANE_CHUNK;

/**
 * The first day whose lead-views the ledger keeps (migration 20261230000300): retention removed
 * the earlier ones while the log may still hold their events, so comparisons and repairs look only
 * at days from it on, and leave the period counters of earlier periods as they are.
 */
const KEPT_FROM = "(SELECT kept_from FROM lead_view_horizon)";

/**
 * A row's fingerprint per (tenant, period): every column the ledger keeps except where it came
 * from in the log, in one canonical order, hashed. Equal fingerprints mean equal rows. Only rows
 * from the offsets the replay read count: at or above each partition's low-water mark (what
 * retention kept) and below its high-water mark. A replayed row whose lead-view the live ledger
 * took from an event retention has since removed is left out too: the live ledger kept that
 * first event, the replay could only see a later duplicate of it. Days before the ledger's
 * horizon are left out on both sides.
 */
function fingerprintQuery(table: string): string {
  const trimmedFirst =
    table === "lead_views"
      ? ""
      : `AND NOT EXISTS (SELECT 1 FROM lead_views AS live
                          WHERE live.tenant_id = rows.tenant_id AND live.day = rows.day
                            AND live.folio = rows.folio
                            AND live.source_partition = replayed.partition
                            AND live.source_offset < replayed.low)`;
  return `SELECT tenant_id, to_char(billing_period_start, 'YYYY-MM-DD') AS period_start,
      count(*)::int AS lead_views,
      md5(string_agg(concat_ws('|', to_char(day, 'YYYY-MM-DD'), folio, surface, request_id,
        coalesce(key_id, '-'), coalesce(member_id, '-'),
        to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')),
        E'\\n' ORDER BY day, folio)) AS fingerprint
    FROM ${table} AS rows
    JOIN unnest($1::int[], $2::bigint[], $3::bigint[]) AS replayed(partition, low, high)
      ON rows.source_partition = replayed.partition
     AND rows.source_offset >= replayed.low AND rows.source_offset < replayed.high
     AND rows.day >= ${KEPT_FROM}
     ${trimmedFirst}
    GROUP BY tenant_id, billing_period_start`;
}

export interface PeriodDifference {
  tenant_id: string;
  period_start: string;
  live_lead_views: number | null;
  shadow_lead_views: number | null;
}

export interface CounterDifference {
  tenant_id: string;
  period_start: string;
  counted: number | null;
  rows: number | null;
}

function copyLine({ value: view, partition, offset }: ShadowRow): string {
  // Nearly every value needs no escaping: one test over all of them instead of one per value.
  const plain = `${view.tenant_id}${view.day}${view.folio}${view.billing_period_start}${view.surface}${view.request_id}${view.key_id ?? ""}${view.member_id ?? ""}${view.recorded_at}`;
  if (!needsCopyEscape(plain)) {
    return `${view.tenant_id}\t${view.day}\t${view.folio}\t${view.billing_period_start}\t${view.surface}\t${view.request_id}\t${view.key_id ?? "\\N"}\t${view.member_id ?? "\\N"}\t${view.recorded_at}\t${partition}\t${offset}\n`;
  }
  return `${copyText(view.tenant_id)}\t${copyText(view.day)}\t${copyText(view.folio)}\t${copyText(view.billing_period_start)}\t${copyText(view.surface)}\t${copyText(view.request_id)}\t${copyText(view.key_id)}\t${copyText(view.member_id)}\t${copyText(view.recorded_at)}\t${partition}\t${offset}\n`;
}

/** Appends rows to the shadow ledger while a replay goes on; `close` waits for every row. */
export interface ShadowWriter {
  /** Buffers rows; resolves at once unless a connection is behind (backpressure). */
  write(rows: readonly ShadowRow[]): Promise<void>;
  close(): Promise<void>;
  /** Gives up: the rows sent so far are rolled back and the connections released. */
  abort(): Promise<void>;
}

/** One connection running one COPY for the whole replay. */
async function openLane(pool: Pool) {
  const client: PoolClient = await pool.connect();
  const stream = copyFromStdin(client, COPY_SQL, { highWaterMark: LANE_BACKLOG });
  let failure: Error | undefined;
  const done = new Promise<void>((resolve, reject) => {
    stream.once("finish", resolve);
    stream.once("error", (error: Error) => {
      failure = error;
      reject(error);
    });
  });
  done.catch(() => {});
  let released = false;
  const release = (error?: Error) => {
    if (!released) {
      released = true;
      client.release(error);
    }
  };
  let chunk = Buffer.allocUnsafe(LANE_CHUNK);
  let used = 0;
  const send = async () => {
    // The stream keeps the chunk until the socket has taken it, so the next one is a new buffer.
    const full = chunk.subarray(0, used);
    chunk = Buffer.allocUnsafe(LANE_CHUNK);
    used = 0;
    if (!stream.write(full)) {
      await Promise.race([once(stream, "drain"), done]);
    }
  };
  return {
    /** Appends one line; false when the chunk has no room for it (send, then add again). */
    add(line: string): boolean {
      // A UTF-16 unit is at most three UTF-8 bytes.
      if (used + line.length * 3 > chunk.length) {
        if (used > 0) {
          return false;
        }
        chunk = Buffer.allocUnsafe(line.length * 3);
      }
      used += chunk.write(line, used);
      return true;
    },
    async send() {
      if (failure) {
        throw failure;
      }
      await send();
    },
    async close() {
      try {
        stream.end(chunk.subarray(0, used));
        used = 0;
        await done;
      } finally {
        release(failure);
      }
    },
    abort() {
      // Destroying the connection ends the COPY without committing anything of it.
      release(failure ?? new Error("shadow ledger replay aborted"));
    },
  };
}

type Lane = Awaited<ReturnType<typeof openLane>>;

/** One (tenant, UTC day) whose lead-views a rebuild replaced: the live count, then the rebuilt. */
export interface DayCorrection {
  tenant_id: string;
  day: string;
  live_lead_views: number;
  rebuilt_lead_views: number;
}

/**
 * The window of the log a replay read, as a relation (partition, low, high), and the shadow rows
 * that may replace live ones: those read in it, less any whose lead-view the live ledger holds
 * from outside it (an event retention has since trimmed, or one read after the replay). Days
 * before the ledger's horizon are neither.
 */
const WINDOW_SQL = `window_ AS (
    SELECT * FROM unnest($1::int[], $2::bigint[], $3::bigint[]) AS w(partition, low, high)
  ), live AS (
    SELECT l.* FROM lead_views l JOIN window_ w
      ON l.source_partition = w.partition AND l.source_offset >= w.low AND l.source_offset < w.high
     WHERE l.day >= ${KEPT_FROM}
  ), rebuilt AS (
    SELECT s.* FROM lead_views_shadow s JOIN window_ w
      ON s.source_partition = w.partition AND s.source_offset >= w.low AND s.source_offset < w.high
     WHERE s.day >= ${KEPT_FROM}
       AND NOT EXISTS (
       SELECT 1 FROM lead_views o
        WHERE o.tenant_id = s.tenant_id AND o.day = s.day AND o.folio = s.folio
          AND NOT EXISTS (SELECT 1 FROM window_ w2 WHERE o.source_partition = w2.partition
                            AND o.source_offset >= w2.low AND o.source_offset < w2.high))
  )`;

const ROW_TEXT = `concat_ws('|', folio, surface, request_id, coalesce(key_id, '-'),
  coalesce(member_id, '-'), to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))`;

/**
 * The replayed window as query parameters: partitions, their low-water marks (0 where retention
 * kept everything) and their high-water marks, in one order.
 */
export function windowParameters(
  highWaterMarks: ReadonlyMap<number, string>,
  lowWaterMarks: ReadonlyMap<number, string>,
): [number[], string[], string[]] {
  const partitions = [...highWaterMarks.keys()];
  return [
    partitions,
    partitions.map((partition) => lowWaterMarks.get(partition) ?? "0"),
    partitions.map((partition) => highWaterMarks.get(partition) ?? "0"),
  ];
}

/** The (tenant, day) pairs whose live rows in the window differ from the rebuilt ones. */
async function dayCorrections(client: PoolClient, window: unknown[]): Promise<DayCorrection[]> {
  const { rows } = await client.query<DayCorrection>(
    `WITH ${WINDOW_SQL},
     live_days AS (
       SELECT tenant_id, day, count(*)::int AS n, md5(string_agg(${ROW_TEXT}, E'\n' ORDER BY folio)) AS f
         FROM live GROUP BY 1, 2),
     rebuilt_days AS (
       SELECT tenant_id, day, count(*)::int AS n, md5(string_agg(${ROW_TEXT}, E'\n' ORDER BY folio)) AS f
         FROM rebuilt GROUP BY 1, 2)
     SELECT coalesce(l.tenant_id, r.tenant_id) AS tenant_id,
            to_char(coalesce(l.day, r.day), 'YYYY-MM-DD') AS day,
            coalesce(l.n, 0) AS live_lead_views, coalesce(r.n, 0) AS rebuilt_lead_views
       FROM live_days l FULL JOIN rebuilt_days r USING (tenant_id, day)
      WHERE l.f IS DISTINCT FROM r.f
      ORDER BY 1, 2`,
    window,
  );
  return rows;
}

/** Replaces the live rows read in the window with the rebuilt ones. */
async function replaceWindowRows(client: PoolClient, window: unknown[]): Promise<void> {
  await client.query(
    `WITH ${WINDOW_SQL}
     DELETE FROM lead_views l USING window_ w
      WHERE l.source_partition = w.partition
        AND l.source_offset >= w.low AND l.source_offset < w.high
        AND l.day >= ${KEPT_FROM}`,
    window,
  );
  await client.query(
    `WITH ${WINDOW_SQL}
     INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
                             key_id, member_id, recorded_at, source_partition, source_offset)
     SELECT tenant_id, day, folio, billing_period_start, surface, request_id, key_id,
            member_id, recorded_at, source_partition, source_offset
       FROM rebuilt
     ON CONFLICT DO NOTHING`,
    window,
  );
}

/**
 * The counters are a function of the rows: recounted whole, so none can disagree. Periods that
 * began before the ledger's horizon keep their counters: retention removed some of their rows,
 * never what was billed for them.
 */
async function recountPeriodUsage(client: PoolClient): Promise<void> {
  await client.query(
    `WITH counted AS (
       SELECT tenant_id, billing_period_start AS period_start, count(*)::int AS n
         FROM lead_views
        WHERE billing_period_start >= ${KEPT_FROM} AND day >= ${KEPT_FROM}
        GROUP BY 1, 2)
     MERGE INTO period_usage u USING counted c
        ON u.tenant_id = c.tenant_id AND u.period_start = c.period_start
      WHEN MATCHED AND u.lead_views <> c.n THEN UPDATE SET lead_views = c.n
      WHEN NOT MATCHED THEN INSERT (tenant_id, period_start, lead_views)
                            VALUES (c.tenant_id, c.period_start, c.n)`,
  );
  await client.query(
    `DELETE FROM period_usage u WHERE u.period_start >= ${KEPT_FROM} AND NOT EXISTS (
       SELECT 1 FROM lead_views l
        WHERE l.tenant_id = u.tenant_id AND l.billing_period_start = u.period_start)`,
  );
}

/** A writer over open lanes: rows go to the lane of their partition. */
function laneWriter(opened: Lane[]): ShadowWriter {
  const lanes = opened.length;
  return {
    async write(rows) {
      for (const row of rows) {
        const lane = opened[row.partition % lanes] as Lane;
        const line = copyLine(row);
        // Writers of different partitions may share a lane and refill it while this one
        // waits for the connection, so the line is added again until it fits.
        while (!lane.add(line)) {
          await lane.send();
        }
      }
    },
    async close() {
      await Promise.all(opened.map((lane) => lane.close()));
    },
    async abort() {
      for (const lane of opened) {
        lane.abort();
      }
    },
  };
}

export function createShadowLedger(pool: Pool) {
  return {
    /**
     * Replaces the live ledger's rows of the replayed window with the shadow's, recounts every
     * period's usage from the rows, and answers the (tenant, day) pairs it changed, all in one
     * transaction that holds off the live consumer's writes: readers see the old ledger or the
     * new one, never a mix. The partitions of rebuilt months that have none (views the live
     * ledger never recorded) are made first.
     */
    async swapIn(
      highWaterMarks: ReadonlyMap<number, string>,
      lowWaterMarks: ReadonlyMap<number, string> = new Map(),
    ): Promise<DayCorrection[]> {
      const window = windowParameters(highWaterMarks, lowWaterMarks);
      const { rows: months } = await pool.query<{ day: string }>(
        `SELECT DISTINCT to_char(date_trunc('month', day), 'YYYY-MM-DD') AS day
           FROM lead_views_shadow WHERE day >= ${KEPT_FROM}`,
      );
      await ensureLeadViewMonthsOf(
        pool,
        months.map((month) => month.day),
      );
      return inTransaction(pool, async (client) => {
        await client.query("LOCK TABLE lead_views, period_usage IN SHARE ROW EXCLUSIVE MODE");
        const corrections = await dayCorrections(client, window);
        await replaceWindowRows(client, window);
        await recountPeriodUsage(client);
        return corrections;
      });
    },

    async reset(): Promise<void> {
      await pool.query("TRUNCATE lead_views_shadow");
    },

    /**
     * Opens `lanes` connections, each running one COPY for the whole replay: rows go to the
     * lane of their partition, so the replay reads the log while Postgres stores what it read,
     * on as many backends as there are lanes.
     */
    async openWriter(lanes = 2): Promise<ShadowWriter> {
      return laneWriter(await Promise.all(Array.from({ length: lanes }, () => openLane(pool))));
    },

    /** Appends rows with one COPY on one connection. */
    async insert(rows: readonly ShadowRow[]): Promise<void> {
      if (rows.length === 0) {
        return;
      }
      const client = await pool.connect();
      try {
        await copyLines(client, COPY_SQL, rows.map(copyLine));
      } finally {
        client.release();
      }
    },

    /**
     * Tenant periods whose live rows differ from the replayed ones, looking only at events the
     * replay read (offsets between the low- and high-water marks it began with).
     */
    async differences(
      highWaterMarks: ReadonlyMap<number, string>,
      lowWaterMarks: ReadonlyMap<number, string> = new Map(),
    ): Promise<PeriodDifference[]> {
      const { rows } = await pool.query<PeriodDifference>(
        `WITH live AS (${fingerprintQuery("lead_views")}),
              shadow AS (${fingerprintQuery("lead_views_shadow")})
         SELECT coalesce(live.tenant_id, shadow.tenant_id) AS tenant_id,
                coalesce(live.period_start, shadow.period_start) AS period_start,
                live.lead_views AS live_lead_views, shadow.lead_views AS shadow_lead_views
         FROM live FULL JOIN shadow USING (tenant_id, period_start)
         WHERE live.fingerprint IS DISTINCT FROM shadow.fingerprint
         ORDER BY 1, 2`,
        windowParameters(highWaterMarks, lowWaterMarks),
      );
      return rows;
    },

    /**
     * Period counters that disagree with the live rows they count, for the periods whose rows
     * retention has not begun to remove.
     */
    async counterDifferences(): Promise<CounterDifference[]> {
      const { rows } = await pool.query<CounterDifference>(
        `WITH counted AS (
           SELECT tenant_id, to_char(billing_period_start, 'YYYY-MM-DD') AS period_start,
                  count(*)::int AS rows
           FROM lead_views
           WHERE billing_period_start >= ${KEPT_FROM} AND day >= ${KEPT_FROM}
           GROUP BY tenant_id, billing_period_start)
         SELECT coalesce(usage.tenant_id, counted.tenant_id) AS tenant_id,
                coalesce(usage.period_start, counted.period_start) AS period_start,
                usage.lead_views AS counted, counted.rows
         FROM (SELECT tenant_id, to_char(period_start, 'YYYY-MM-DD') AS period_start, lead_views
               FROM period_usage WHERE period_start >= ${KEPT_FROM}) AS usage
         FULL JOIN counted USING (tenant_id, period_start)
         WHERE usage.lead_views IS DISTINCT FROM counted.rows
         ORDER BY 1, 2`,
      );
      return rows;
    },

    async summary(): Promise<{ rows: number; tenants: number; periods: number }> {
      const { rows } = await pool.query<{ rows: number; tenants: number; periods: number }>(
        `SELECT count(*)::int AS rows, count(DISTINCT tenant_id)::int AS tenants,
                count(DISTINCT (tenant_id, billing_period_start))::int AS periods
         FROM lead_views_shadow`,
      );
      return rows[0] ?? { rows: 0, tenants: 0, periods: 0 };
    },
  };
}

export type ShadowLedger = ReturnType<typeof createShadowLedger>;
