import type { AnyTopicContract, Bus } from "@th/bus";
import { contractForTopic, type TopicContract } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import type { Logger } from "@th/telemetry";

/**
 * The transactional outbox: a service writes the events of a change into its `outbox` table in
 * the same transaction as the change, and the relay publishes them afterwards. A crash between
 * commit and publish only delays the event; it cannot lose it. Each service's migrations create
 * the table: `outbox (id bigserial PRIMARY KEY, topic text, payload jsonb, created_at timestamptz,
 * published_at timestamptz)` with a partial index on unpublished ids.
 */
export async function enqueueEvent<T>(
  client: PoolClient,
  contract: TopicContract<T>,
  value: T,
): Promise<void> {
  await client.query("INSERT INTO outbox (topic, payload) VALUES ($1, $2)", [
    contract.topic,
    JSON.stringify(value),
  ]);
}

export interface OutboxRelay {
  /** Publishes what is pending now instead of at the next tick; resolves when done. */
  flush(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

export function createOutboxRelay(options: {
  pool: Pool;
  bus: Bus;
  logger: Logger;
  intervalMs?: number;
  batchSize?: number;
}): OutboxRelay {
  const { pool, bus, logger } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;

  async function publishBatch(): Promise<number> {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      // SKIP LOCKED lets several replicas relay at once without publishing a row twice.
      const { rows } = await client.query<{ id: string; topic: string; payload: unknown }>(
        `SELECT id, topic, payload FROM outbox WHERE published_at IS NULL
         ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [options.batchSize ?? 500],
      );
      // Consecutive rows of one topic go in one request; order across rows is kept.
      let index = 0;
      while (index < rows.length) {
        const topic = rows[index]?.topic as string;
        const run: unknown[] = [];
        while (index < rows.length && rows[index]?.topic === topic) {
          run.push(rows[index]?.payload);
          index++;
        }
        const contract = contractForTopic(topic) as AnyTopicContract | undefined;
        if (!contract) {
          throw new Error(`outbox row for unknown topic ${topic}`);
        }
        await bus.publish(contract, run as never[]);
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
    start() {
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
