import { randomInt } from "node:crypto";
import { join } from "node:path";
import { type AnyTopicContract, type Bus, type PublishedRecord, partitionOfKey } from "@th/bus";
import { contractForTopic, type TopicContract } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import { type Logger, outsideAnyTrace, traceContextOf } from "@th/telemetry";
import { coalescedDrains } from "./coalesced-drains.ts";

/**
 * The outbox's migrations, for the `shared` folders of a service's migration set: the service
 * applies them to its own schema, in timestamp order among its own, under its own history.
 */
export const outboxMigrations = {
  /** Makes the outbox where a schema has none and carries every later change to it. */
  current: join(import.meta.dirname, "migrations", "outbox"),
  /**
   * The outbox migrations keys, matcher and webhook-dispatcher each once kept a copy of, byte for
   * byte: their databases recorded these ids and checksums, which the migrator finds here now.
   * Only those services apply them, before `current`; they are never edited.
   */
  recorded: join(import.meta.dirname, "migrations", "outbox-recorded"),
};

/**
 * The transactional outbox: a service writes the events of a change into its `outbox` table in
 * the same transaction as the change, and the relay publishes them afterwards. A crash between
 * commit and publish only delays the event; it cannot lose it. The table is this kit's: a service
 * with an outbox applies `outboxMigrations` to its schema (decision 0395), which make `outbox (id
 * bigserial PRIMARY KEY, topic text, payload jsonb, created_at timestamptz, published_at
 * timestamptz, headers jsonb, shard smallint)` with a partial index on unpublished (shard, id);
 * published rows are deleted after `OUTBOX_RETENTION_MS`.
 * `headers` keeps the trace context of the work that wrote the row (the active one unless
 * given), so the event is published as part of that trace.
 */
export async function enqueueEvent<T>(
  client: PoolClient,
  contract: TopicContract<T>,
  value: T,
  traceContext: Record<string, string> = traceContextOf(),
): Promise<void> {
  await client.query(
    "INSERT INTO outbox (topic, payload, headers, shard) VALUES ($1, $2, $3, $4)",
    [
      contract.topic,
      JSON.stringify(value),
      Object.keys(traceContext).length > 0 ? JSON.stringify(traceContext) : null,
      outboxShard(contract, value),
    ],
  );
}

/**
 * The relay shard of an event: the partition its key falls on under the topic's declared plan.
 * Events of one key share a shard, and one relay at a time publishes a shard in table order, so
 * each key's events reach the broker in the order they were committed (decision 0260).
 */
export function outboxShard<T>(contract: TopicContract<T>, value: T): number {
  return partitionOfKey(contract.keyOf(value), contract.partitions);
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
const OUTBOX_RETENTION_MS = 86_400_000;
const PURGE_EVERY_MS = 300_000;
const PURGE_BATCH = 5_000;
const PURGE_ROUNDS = 20;

type OutboxRow = {
  id: string;
  topic: string;
  payload: unknown;
  headers: Record<string, string> | null;
};

/** The relay lock of one shard: (this schema's relay, shard), in the two-key advisory space. */
const RELAY_LOCK = `hashtext(current_schema() || '.outbox-relay'), $1::int`;

/**
 * The relay's and the purge's statements. Each reads through an index however long the table
 * is: the test of the outbox migrations checks their plans on a filled table.
 */
export const OUTBOX_QUERIES = {
  /**
   * The shards with unpublished rows, one probe of the unpublished (shard, id) index per shard
   * (a loose index scan), so the question costs the same however long the backlog is.
   */
  pendingShards: `
WITH RECURSIVE pending AS (
  (SELECT shard FROM outbox WHERE published_at IS NULL ORDER BY shard LIMIT 1)
  UNION ALL
  SELECT (SELECT o.shard FROM outbox o
           WHERE o.published_at IS NULL AND o.shard > pending.shard
           ORDER BY o.shard LIMIT 1)
    FROM pending WHERE pending.shard IS NOT NULL
)
SELECT shard FROM pending WHERE shard IS NOT NULL`,
  /** A shard's next batch ($1 the shard, $2 the batch size), in table order. */
  claim: `SELECT id, topic, payload, headers FROM outbox WHERE published_at IS NULL AND shard = $1
     ORDER BY id LIMIT $2`,
  markPublished: "UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[])",
  /**
   * One purge round ($1 the retention in seconds, $2 the batch size): deletes the first rows
   * below the first one that is unpublished or still retained, found by walking the primary key.
   * The rows go by the range from the batch's first id to its last, which the primary key
   * serves; asked as `id IN (batch)` the planner hashed the batch and scanned the whole table.
   */
  purge: `WITH bound AS (
       SELECT coalesce(
         (SELECT id FROM outbox
           WHERE published_at IS NULL OR published_at >= now() - make_interval(secs => $1)
           ORDER BY id LIMIT 1),
         (SELECT max(id) + 1 FROM outbox)) AS id
     ),
     batch AS (
       SELECT min(id) AS first, max(id) AS last FROM (
         SELECT id FROM outbox WHERE id < (SELECT id FROM bound) ORDER BY id LIMIT $2) ids
     )
     DELETE FROM outbox
      WHERE id >= (SELECT first FROM batch) AND id <= (SELECT last FROM batch)`,
};

/**
 * Publishes a batch in one request per topic, the topics at once, and resolves once all are
 * acknowledged. A key belongs to one topic, so grouping by topic keeps each key's commit order.
 * A shard mixes topics (the dispatcher's attempts, keyed by delivery, beside its lead views,
 * keyed by tenant): a request per run of consecutive rows of one topic would cost a broker round
 * trip per change of topic, hundreds per batch.
 */
async function publishRows(bus: Bus, rows: readonly OutboxRow[]): Promise<void> {
  const groups = [...Map.groupBy(rows, (row) => row.topic)].map(([topic, group]) => {
    const contract = contractForTopic(topic) as AnyTopicContract | undefined;
    if (!contract) {
      throw new Error(`outbox row for unknown topic ${topic}`);
    }
    const records = group.map((row) =>
      row.headers ? { value: row.payload, headers: row.headers } : { value: row.payload },
    );
    return { contract, records: records as PublishedRecord<never>[] };
  });
  // A row written outside any trace must not join whichever trace asked for this flush.
  await Promise.all(
    groups.map(({ contract, records }) =>
      outsideAnyTrace(() => bus.publishRecords(contract, records)),
    ),
  );
}

/**
 * One batch of a shard under its lock, which the caller holds: read it, publish it, mark it
 * published once the broker acknowledged it. Each statement is its own short transaction, so no
 * transaction and no row lock stays open while the broker's retries run, however long.
 */
async function publishBatch(
  client: PoolClient,
  bus: Bus,
  shard: number,
  batchSize: number,
): Promise<number> {
  const { rows } = await client.query<OutboxRow>(OUTBOX_QUERIES.claim, [shard, batchSize]);
  if (rows.length > 0) {
    await publishRows(bus, rows);
    await client.query(OUTBOX_QUERIES.markPublished, [rows.map((row) => row.id)]);
  }
  return rows.length;
}

/**
 * Relays take turns on each shard under a session advisory lock: each turn is one batch of one
 * shard. One relay at a time per shard keeps each key's order on the wire, while relays of
 * several replicas publish different shards at once; a turn of one batch lets every replica
 * take its share. A crash between publish and mark publishes the batch again (at-least-once); a
 * relay that dies drops its connection, and with it the lock. Answers how many rows were
 * published, or undefined when another relay holds the shard.
 */
async function publishTurn(
  pool: Pool,
  bus: Bus,
  shard: number,
  batchSize: number,
): Promise<number | undefined> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const { rows: lock } = await client.query<{ locked: boolean }>(
      `SELECT pg_try_advisory_lock(${RELAY_LOCK}) AS locked`,
      [shard],
    );
    if (!lock[0]?.locked) {
      return undefined;
    }
    try {
      return await publishBatch(client, bus, shard, batchSize);
    } finally {
      await client
        .query(`SELECT pg_advisory_unlock(${RELAY_LOCK})`, [shard])
        .catch((error: Error) => {
          broken = error;
        });
    }
  } catch (error) {
    broken ??= error as Error;
    throw error;
  } finally {
    // A connection that failed mid-way may still hold the lock: it is closed, not reused.
    client.release(broken);
  }
}

/** `items` starting at position `from` (modulo their count) and wrapping around. */
export function rotated<T>(items: readonly T[], from: number): T[] {
  if (items.length === 0) {
    return [];
  }
  const start = ((from % items.length) + items.length) % items.length;
  return [...items.slice(start), ...items.slice(0, start)];
}

/**
 * Publishes a turn on every pending shard, pass after pass, until no turn comes back full. Each
 * relay starts its passes at a shard of its own, so replicas spread over the shards instead of
 * queueing for the same lock. A shard another relay holds is that relay's to finish; a row
 * committed after the last read is published by the next tick of whichever relay runs then.
 */
async function drainOutbox(
  pool: Pool,
  bus: Bus,
  batchSize: number,
  nextStart: () => number,
): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await pool.query<{ shard: number }>(OUTBOX_QUERIES.pendingShards);
    let full = false;
    for (const { shard } of rotated(rows, nextStart())) {
      const published = await publishTurn(pool, bus, shard, batchSize);
      total += published ?? 0;
      full ||= published === batchSize;
    }
    if (!full) {
      return total;
    }
  }
}

/**
 * Without it the table grows by every event ever sent. Rows are published in id order within
 * their shard and shards drain together, so the expired ones sit at the head of the table: each round deletes below the first row that is
 * unpublished or still within the retention, found by walking the primary key from the start,
 * and never scans the day of rows it keeps. A run deletes at most PURGE_ROUNDS batches.
 */
async function purgeOutbox(pool: Pool, retentionMs: number): Promise<number> {
  let total = 0;
  for (let round = 0; round < PURGE_ROUNDS; round++) {
    const { rowCount } = await pool.query(OUTBOX_QUERIES.purge, [retentionMs / 1000, PURGE_BATCH]);
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < PURGE_BATCH) {
      break;
    }
  }
  return total;
}

/** Calls `work` every `everyMs` after the previous call settled, until stopped. */
function repeatAfter(
  everyMs: number,
  work: () => Promise<unknown>,
  unref: boolean,
): { start(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  function schedule() {
    if (stopped) {
      return;
    }
    timer = setTimeout(() => {
      void work().finally(schedule);
    }, everyMs);
    if (unref) {
      timer.unref();
    }
  }
  return {
    start() {
      stopped = false;
      schedule();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

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
  const batchSize = options.batchSize ?? 500;
  let start = randomInt(1 << 16);
  const drains = coalescedDrains(() => drainOutbox(pool, bus, batchSize, () => start++));
  const purge = () => purgeOutbox(pool, retentionMs);
  const publishing = repeatAfter(
    options.intervalMs ?? 250,
    () =>
      drains
        .flush()
        .catch((error: unknown) => logger.warn({ err: error }, "outbox relay failed; will retry")),
    false,
  );
  // Its own timer: a long purge never holds up publishing.
  const purging = repeatAfter(
    PURGE_EVERY_MS,
    () =>
      purge().catch((error: unknown) =>
        logger.warn({ err: error }, "outbox purge failed; will retry"),
      ),
    true,
  );
  return {
    flush: drains.flush,
    purge,
    start() {
      publishing.start();
      purging.start();
    },
    async stop() {
      publishing.stop();
      purging.stop();
      await drains.running()?.catch(() => {});
    },
  };
}
