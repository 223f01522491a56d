import type { AnyTopicContract, Bus, PublishedRecord } from "@th/bus";
import { contractForTopic, type TopicContract } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import { type Logger, outsideAnyTrace, traceContextOf } from "@th/telemetry";

/**
 * The transactional outbox: a service writes the events of a change into its `outbox` table in
 * the same transaction as the change, and the relay publishes them afterwards. A crash between
 * commit and publish only delays the event; it cannot lose it. Each service's migrations create
 * the table: `outbox (id bigserial PRIMARY KEY, topic text, payload jsonb, created_at timestamptz,
 * published_at timestamptz, headers jsonb)` with a partial index on unpublished ids; published
 * rows are deleted after `OUTBOX_RETENTION_MS`. `headers`
 * keeps the trace context of the work that wrote the row (the active one unless given), so the
 * event is published as part of that trace.
 */
export async function enqueueEvent<T>(
  client: PoolClient,
  contract: TopicContract<T>,
  value: T,
  traceContext: Record<string, string> = traceContextOf(),
): Promise<void> {
  await client.query("INSERT INTO outbox (topic, payload, headers) VALUES ($1, $2, $3)", [
    contract.topic,
    JSON.stringify(value),
    Object.keys(traceContext).length > 0 ? JSON.stringify(traceContext) : null,
  ]);
}

export interface OutboxRelay {
  /** Publishes what is pending now instead of at the next tick; resolves when done. */
  flush(): Promise<number>;
  /** Deletes rows published longer ago than the retention; resolves with how many. */
  purge(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

/** Published rows stay this long for inspection, then the relay deletes them. */
export const OUTBOX_RETENTION_MS = 86_400_000;
const PURGE_EVERY_MS = 300_000;
const PURGE_BATCH = 5_000;
const PURGE_ROUNDS = 20;

export function createOutboxRelay(options: {
  pool: Pool;
  bus: Bus;
  logger: Logger;
  intervalMs?: number;
  batchSize?: number;
  retentionMs?: number;
}): OutboxRelay {
  const { pool, bus, logger } = options;
  const retentionMs = options.retentionMs ?? OUTBOX_RETENTION_MS;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;

  async function publishBatch(): Promise<number> {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      // SKIP LOCKED lets several replicas relay at once without publishing a row twice.
      const { rows } = await client.query<{
        id: string;
        topic: string;
        payload: unknown;
        headers: Record<string, string> | null;
      }>(
        `SELECT id, topic, payload, headers FROM outbox WHERE published_at IS NULL
         ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [options.batchSize ?? 500],
      );
      // Consecutive rows of one topic go in one request; order across rows is kept.
      let index = 0;
      while (index < rows.length) {
        const topic = rows[index]?.topic as string;
        const run: PublishedRecord<unknown>[] = [];
        while (index < rows.length && rows[index]?.topic === topic) {
          const row = rows[index] as (typeof rows)[number];
          run.push(
            row.headers ? { value: row.payload, headers: row.headers } : { value: row.payload },
          );
          index++;
        }
        const contract = contractForTopic(topic) as AnyTopicContract | undefined;
        if (!contract) {
          throw new Error(`outbox row for unknown topic ${topic}`);
        }
        // A row written outside any trace must not join whichever trace asked for this flush.
        await outsideAnyTrace(() => bus.publishRecords(contract, run as PublishedRecord<never>[]));
      }
      if (rows.length > 0) {
        await client.query("UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[])", [
          rows.map((row) => row.id),
        ]);
      }
      await client.query("COMMIT");
      return rows.length;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async function drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const published = await publishBatch();
      total += published;
      if (published === 0) {
        return total;
      }
    }
  }

  let pending: Promise<number> | undefined;

  /**
   * Drains now. A flush asked for while a drain runs gets a fresh drain after it: the running one
   * may already have read past rows committed a moment ago.
   */
  function flush(): Promise<number> {
    if (!running) {
      running = drain().finally(() => {
        running = undefined;
      });
      return running;
    }
    if (!pending) {
      pending = running
        .catch(() => 0)
        .then(() => {
          pending = undefined;
          return flush();
        });
    }
    return pending;
  }

  /**
   * Without it the table grows by every event ever sent. Rows are published in id order, so the
   * expired ones sit at the head of the table: each round deletes below the first row that is
   * unpublished or still within the retention, found by walking the primary key from the start,
   * and never scans the day of rows it keeps. A run deletes at most PURGE_ROUNDS batches.
   */
  async function purge(): Promise<number> {
    let total = 0;
    for (let round = 0; round < PURGE_ROUNDS; round++) {
      const { rowCount } = await pool.query(
        `WITH bound AS (
           SELECT coalesce(
             (SELECT id FROM outbox
               WHERE published_at IS NULL OR published_at >= now() - make_interval(secs => $1)
               ORDER BY id LIMIT 1),
             (SELECT max(id) + 1 FROM outbox)) AS id
         )
         DELETE FROM outbox WHERE id IN (
           SELECT id FROM outbox WHERE id < (SELECT id FROM bound) ORDER BY id LIMIT $2)`,
        [retentionMs / 1000, PURGE_BATCH],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < PURGE_BATCH) {
        break;
      }
    }
    return total;
  }

  let purgeTimer: NodeJS.Timeout | undefined;
  function schedulePurge() {
    if (stopped) {
      return;
    }
    // Its own timer: a long purge never holds up publishing.
    purgeTimer = setTimeout(() => {
      purge()
        .catch((error: unknown) => logger.warn({ err: error }, "outbox purge failed; will retry"))
        .finally(schedulePurge);
    }, PURGE_EVERY_MS);
    purgeTimer.unref();
  }

  function schedule() {
    if (stopped) {
      return;
    }
    timer = setTimeout(() => {
      flush()
        .catch((error: unknown) => logger.warn({ err: error }, "outbox relay failed; will retry"))
        .finally(schedule);
    }, options.intervalMs ?? 250);
  }

  return {
    flush,
    purge,
    start() {
      stopped = false;
      schedule();
      schedulePurge();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(purgeTimer);
      await running?.catch(() => {});
    },
  };
}
