import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { assertSchemaName } from "./pool.ts";

/** `20261121093000_create_tenants.sql`: a UTC timestamp, so two branches never collide on a number. */
const MIGRATION_FILE = /^(\d{14})_([a-z0-9_]+)\.sql$/;

export interface Migration {
  id: string;
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrationSet {
  /** The Postgres schema the service owns. */
  schema: string;
  /** Folder of the service's migration files. */
  dir: string;
  /**
   * Folders of migrations another package owns that this schema applies too (the outbox's, from
   * service-kit). Their files join the service's in timestamp order under the same history, so a
   * file moved there from the service keeps its recorded id and checksum.
   */
  shared?: readonly string[];
}

export async function readMigrations(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => file.endsWith(".sql")).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = MIGRATION_FILE.exec(file);
    if (!match) {
      throw new Error(`migration file ${file} must be named <yyyymmddhhmmss>_<snake_name>.sql`);
    }
    const sql = await readFile(join(dir, file), "utf8");
    migrations.push({
      id: match[1] as string,
      name: match[2] as string,
      sql,
      checksum: createHash("sha256").update(sql).digest("hex"),
    });
  }
  return migrations;
}

/** A set's migrations: the service's own and its shared folders', in timestamp order. */
export async function readMigrationSet(set: MigrationSet): Promise<Migration[]> {
  const all = (
    await Promise.all([set.dir, ...(set.shared ?? [])].map((dir) => readMigrations(dir)))
  ).flat();
  const seen = new Set<string>();
  for (const migration of all) {
    if (seen.has(migration.id)) {
      throw new Error(`${set.schema}: two migration files share the timestamp ${migration.id}`);
    }
    seen.add(migration.id);
  }
  return all.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export interface MigrateResult {
  schema: string;
  applied: string[];
}

/**
 * Applies a service's pending migrations in order, each in its own transaction. Applied
 * migrations are append-only: editing or deleting one that already ran is refused, because
 * databases that ran the old text would silently differ from new ones.
 */
export async function migrate(url: string, set: MigrationSet): Promise<MigrateResult> {
  const schema = assertSchemaName(set.schema);
  const migrations = await readMigrationSet(set);
  const client = new pg.Client({ connectionString: url, application_name: `${schema}-migrate` });
  // A lost connection fails the query in flight; without a listener it would also end the process.
  client.on("error", () => {});
  await client.connect();
  try {
    // Replicas starting together must not race on the same migration.
    await client.query("SELECT pg_advisory_lock(hashtext($1))", [`migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         id text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ id: string; name: string; checksum: string }>(
      `SELECT id, name, checksum FROM ${schema}.schema_migrations ORDER BY id`,
    );
    const known = new Map(migrations.map((migration) => [migration.id, migration]));
    for (const row of rows) {
      const file = known.get(row.id);
      if (!file) {
        throw new Error(
          `${schema}: migration ${row.id}_${row.name} was applied but its file is gone`,
        );
      }
      if (file.checksum !== row.checksum) {
        throw new Error(
          `${schema}: migration ${row.id}_${row.name} was edited after it was applied`,
        );
      }
    }
    const appliedIds = new Set(rows.map((row) => row.id));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (appliedIds.has(migration.id)) {
        continue;
      }
      await client.query("BEGIN");
      try {
        await client.query(`SET LOCAL search_path TO ${schema}, public`);
        await client.query(migration.sql);
        await client.query(
          `INSERT INTO ${schema}.schema_migrations (id, name, checksum) VALUES ($1, $2, $3)`,
          [migration.id, migration.name, migration.checksum],
        );
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw new Error(
          `${schema}: migration ${migration.id}_${migration.name} failed: ${(error as Error).message}`,
        );
      }
      applied.push(`${migration.id}_${migration.name}`);
    }
    return { schema, applied };
  } finally {
    await client
      .query("SELECT pg_advisory_unlock(hashtext($1))", [`migrate:${schema}`])
      .catch(() => {});
    await client.end();
  }
}
