import pg from "pg";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** An identifier (a table's name) quoted for SQL text, as pg quotes one. */
export const { escapeIdentifier } = pg;

const SCHEMA_NAME = /^[a-z][a-z0-9_]{0,62}$/;

export function assertSchemaName(schema: string): string {
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`schema name "${schema}" must be lower snake case`);
  }
  return schema;
}

export interface PoolOptions {
  url: string;
  /** Every connection of the pool resolves unqualified names in this schema first. */
  schema: string;
  max?: number;
  applicationName?: string;
  /** Told of every connection the server drops (restart, failover, terminated backend). */
  onConnectionError?: (error: Error) => void;
  /** How long a query waits for a connection before failing; bounds a request's wait in an outage. */
  connectionTimeoutMs?: number;
}

export function createPool(options: PoolOptions): Pool {
  const schema = assertSchemaName(options.schema);
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? schema,
    options: `-c search_path=${schema},public`,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 2_000,
  });
  const report = options.onConnectionError ?? (() => {});
  // The pool listens for errors only on idle clients. A client that is checked out (a
  // transaction, a LISTEN, a query in flight) and loses its server emits "error" with no listener,
  // which would end the process. Every client gets a listener for its whole life: the failed
  // client's queries reject, the pool discards it when released, and the next checkout connects
  // afresh.
  pool.on("connect", (client) => {
    client.on("error", report);
  });
  pool.on("error", report);
  return pool;
}

/** Runs `work` in one transaction, rolling back on any error. */
export async function inTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Readiness probe: true when a trivial query answers within the timeout. */
export async function pingDatabase(pool: Pool, timeoutMs = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timeout")), timeoutMs);
    });
    await Promise.race([pool.query("SELECT 1"), timeout]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
