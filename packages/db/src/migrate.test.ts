import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, readMigrations } from "./migrate.ts";
import { createPool, inTransaction } from "./pool.ts";
import { createTestDatabase, serverUrl, type TestDatabase } from "./testing.ts";

const fixtures = join(import.meta.dirname, "fixtures");
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase([{ schema: "widgets_v1", dir: join(fixtures, "v1") }]);
});
afterAll(() => db.drop());

function freshSchema() {
  return `mig_${randomBytes(4).toString("hex")}`;
}

describe("migrations", () => {
  it("apply pending files in timestamp order into the service's own schema, once", async () => {
    const schema = freshSchema();
    const first = await migrate(db.url, { schema, dir: join(fixtures, "v1") });
    expect(first.applied).toEqual(["20261101000000_create_widgets"]);
    const second = await migrate(db.url, { schema, dir: join(fixtures, "v2") });
    expect(second.applied).toEqual(["20261102000000_add_widget_color"]);
    const again = await migrate(db.url, { schema, dir: join(fixtures, "v2") });
    expect(again.applied).toEqual([]);
    const pool = createPool({ url: db.url, schema });
    await pool.query("INSERT INTO widgets (id, name, color) VALUES ('w1', 'one', 'red')");
    const { rows } = await pool.query(`SELECT color FROM ${schema}.widgets`);
    expect(rows).toEqual([{ color: "red" }]);
    await pool.end();
  });

  it("refuse an applied migration whose text was edited afterwards", async () => {
    const schema = freshSchema();
    const dir = await mkdtemp(join(tmpdir(), "mig-"));
    const file = join(dir, "20261101000000_create_things.sql");
    await writeFile(file, "CREATE TABLE things (id int);");
    await migrate(db.url, { schema, dir });
    await writeFile(file, "CREATE TABLE things (id bigint);");
    await expect(migrate(db.url, { schema, dir })).rejects.toThrow(
      /was edited after it was applied/,
    );
  });

  it("roll back a failing migration completely and name it", async () => {
    const schema = freshSchema();
    const dir = await mkdtemp(join(tmpdir(), "mig-"));
    await writeFile(
      join(dir, "20261101000000_half_broken.sql"),
      "CREATE TABLE half (id int); SELECT no_such_function();",
    );
    await expect(migrate(db.url, { schema, dir })).rejects.toThrow(
      /20261101000000_half_broken failed/,
    );
    const { rowCount } = await db.pool.query(
      "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'half'",
      [schema],
    );
    expect(rowCount).toBe(0);
  });

  it("reject files that are not timestamp-named", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mig-"));
    await writeFile(join(dir, "001_init.sql"), "SELECT 1;");
    await expect(readMigrations(dir)).rejects.toThrow(
      /must be named <yyyymmddhhmmss>_<snake_name>\.sql/,
    );
  });
});

describe("test databases", () => {
  it("are clones of a migrated template, isolated from each other", async () => {
    const other = await createTestDatabase([{ schema: "widgets_v1", dir: join(fixtures, "v1") }]);
    try {
      await db.pool.query("INSERT INTO widgets (id, name) VALUES ('mine', 'x')");
      const { rows } = await other.pool.query("SELECT count(*)::int AS n FROM widgets");
      expect(rows[0].n).toBe(0);
      expect(other.url).not.toBe(db.url);
    } finally {
      await other.drop();
    }
    const admin = new pg.Client({ connectionString: serverUrl() });
    await admin.connect();
    const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [
      new URL(other.url).pathname.slice(1),
    ]);
    await admin.end();
    expect(rowCount).toBe(0);
  });

  it("roll back a transaction when the work throws", async () => {
    await expect(
      inTransaction(db.pool, async (client) => {
        await client.query("INSERT INTO widgets (id, name) VALUES ('tx', 'x')");
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    const { rowCount } = await db.pool.query("SELECT 1 FROM widgets WHERE id = 'tx'");
    expect(rowCount).toBe(0);
  });
});
