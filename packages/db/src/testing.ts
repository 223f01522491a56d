import { createHash, randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import pg from "pg";
import { type MigrationSet, migrate, readMigrationSet } from "./migrate.ts";
import { createPool, type Pool } from "./pool.ts";

export interface TestDatabase {
  /** Connection URL of this test file's own database. */
  url: string;
  /** A pool on the first schema given. */
  pool: Pool;
  poolFor(schema: string): Pool;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** The default server URL; the bootstrap exports DATABASE_URL before tests run. */
export function serverUrl(): string {
  return process.env.DATABASE_URL ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres";
}

async function templateName(sets: readonly MigrationSet[]): Promise<string> {
  const hash = createHash("sha256");
  for (const set of sets) {
    hash.update(set.schema);
    for (const migration of await readMigrationSet(set)) {
      hash.update(migration.id).update(migration.checksum);
    }
  }
  return `th_tpl_${hash.digest("hex").slice(0, 16)}`;
}

/**
 * Gives a test file its own database, cloned from a template that already ran the migrations.
 * Cloning takes milliseconds where migrating each time takes seconds, and the template name is
 * a hash of the migrations so a changed migration builds a fresh template.
 */
export async function createTestDatabase(
  sets: readonly MigrationSet[],
  url = serverUrl(),
): Promise<TestDatabase> {
  const template = await templateName(sets);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const database = `th_test_${randomBytes(6).toString("hex")}`;
  try {
    await admin.query("SELECT pg_advisory_lock(hashtext('th-test-template'))");
    try {
      const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [template]);
      if (exists.rowCount === 0) {
        const building = `${template}_building`;
        await admin.query(`DROP DATABASE IF EXISTS ${building}`);
        await admin.query(`CREATE DATABASE ${building}`);
        for (const set of sets) {
          await migrate(withDatabase(url, building), set);
        }
        await admin.query(`ALTER DATABASE ${building} RENAME TO ${template}`);
      }
      await admin.query(`CREATE DATABASE ${database} TEMPLATE ${template}`);
    } finally {
      await admin.query("SELECT pg_advisory_unlock(hashtext('th-test-template'))");
    }
  } finally {
    await admin.end();
  }
  const databaseUrl = withDatabase(url, database);
  const pools = new Map<string, Pool>();
  const poolFor = (schema: string) => {
    let pool = pools.get(schema);
    if (!pool) {
      pool = createPool({ url: databaseUrl, schema, max: 4 });
      pools.set(schema, pool);
    }
    return pool;
  };
  const first = sets[0]?.schema ?? "public";
  return {
    url: databaseUrl,
    pool: poolFor(first),
    poolFor,
    async drop() {
      await Promise.all([...pools.values()].map((pool) => pool.end()));
      const cleanup = new pg.Client({ connectionString: url });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

let youngGenerationProbe: ((value: unknown) => boolean) | undefined;

/**
 * Whether V8 allocated `value` in the young generation (it was just created and has not yet
 * survived two young collections): the gateway's per-response number text is checked with it.
 */
export function inYoungGeneration(value: unknown): boolean {
  if (!youngGenerationProbe) {
    setFlagsFromString("--allow-natives-syntax");
    youngGenerationProbe = new Function("value", "return %InYoungGeneration(value)") as (
      value: unknown,
    ) => boolean;
  }
  return youngGenerationProbe(value);
}

let collection: ((options: { type: "minor" | "major"; execution: "sync" }) => void) | undefined;

/** Runs a collection now: "minor" collects the young generation (a scavenge), "major" the heap. */
export function collectGarbage(type: "minor" | "major"): void {
  if (!collection) {
    setFlagsFromString("--expose-gc");
    collection = runInNewContext("gc");
  }
  collection?.({ type, execution: "sync" });
}
