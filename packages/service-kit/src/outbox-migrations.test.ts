import { randomBytes } from "node:crypto";
import { copyFile, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commonShape, defineConfig } from "@th/config";
import { contracts } from "@th/contracts";
import { keyIssued } from "@th/contracts/samples";
import { createPool, inTransaction, type MigrationSet, migrate, type Pool } from "@th/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboxRelay, enqueueEvent, OUTBOX_QUERIES, outboxMigrations } from "./outbox.ts";
import { createTestHarness, type TestHarness } from "./testing.ts";

const config = defineConfig(commonShape).load({});
let harness: TestHarness<typeof config>;
const pools: Pool[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  harness = await createTestHarness({ config, migrations: [], topics: [contracts.keyIssued] });
});
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  await harness.close();
});

/** A migration folder holding a service's own table and, optionally, files copied from `from`. */
async function serviceDir(from?: string, extra: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "outbox-migrations-"));
  dirs.push(dir);
  await writeFile(join(dir, "20261121010000_widgets.sql"), "CREATE TABLE widgets (id int);");
  for (const file of from ? await readdir(from) : []) {
    await copyFile(join(from as string, file), join(dir, file));
  }
  for (const [file, sql] of Object.entries(extra)) {
    await writeFile(join(dir, file), sql);
  }
  return dir;
}

function schemaPool(schema: string): Pool {
  const pool = createPool({ url: harness.db.url, schema });
  pools.push(pool);
  return pool;
}

async function apply(set: MigrationSet): Promise<{ applied: string[]; pool: Pool }> {
  const { applied } = await migrate(harness.db.url, set);
  return { applied, pool: schemaPool(set.schema) };
}

function freshSchema(): string {
  return `obx_${randomBytes(4).toString("hex")}`;
}

/** The outbox's columns and indexes, as a schema-independent description to compare. */
async function outboxShape(pool: Pool) {
  const columns = await pool.query(
    `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'outbox' ORDER BY ordinal_position`,
  );
  const indexes = await pool.query(
    `SELECT indexname, replace(indexdef, current_schema() || '.', '') AS indexdef FROM pg_indexes
      WHERE schemaname = current_schema() AND tablename = 'outbox' ORDER BY indexname`,
  );
  return {
    columns: columns.rows.map((row) => ({
      ...row,
      column_default: String(row.column_default).replace(/'[^']*outbox_id_seq'/, "'seq'"),
    })),
    indexes: indexes.rows,
  };
}

/** Writes `count` events and has a relay claim and publish them: the outbox works. */
async function expectRelayed(pool: Pool, count: number, pendingBefore = 0): Promise<void> {
  await inTransaction(pool, async (client) => {
    for (let i = 0; i < count; i++) {
      await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: `k${i}` });
    }
  });
  const relay = createOutboxRelay({ pool, bus: harness.bus, logger: harness.logger });
  expect(await relay.flush()).toBe(pendingBefore + count);
  const { rows } = await pool.query(
    "SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL",
  );
  expect(rows[0].n).toBe(0);
}

/** The outbox's shape on a schema that only ever ran the kit's current migrations. */
async function currentShape() {
  const { pool } = await apply({
    schema: freshSchema(),
    dir: await serviceDir(),
    shared: [outboxMigrations.current],
  });
  return outboxShape(pool);
}

describe("the outbox migrations of service-kit", () => {
  it("make a working outbox in a fresh schema, without the unpublished-id index", async () => {
    const schema = freshSchema();
    const { applied, pool } = await apply({
      schema,
      dir: await serviceDir(),
      shared: [outboxMigrations.current],
    });
    expect(applied).toEqual([
      "20261121010000_widgets",
      "20270315000000_outbox",
      "20270315000100_drop_outbox_unpublished",
    ]);
    const shape = await outboxShape(pool);
    expect(shape.columns.map((column) => column.column_name)).toEqual([
      "id",
      "topic",
      "payload",
      "created_at",
      "published_at",
      "headers",
      "shard",
    ]);
    expect(shape.indexes.map((index) => index.indexname)).toEqual([
      "outbox_pkey",
      "outbox_unpublished_by_shard",
    ]);
    await expectRelayed(pool, 3);
  });

  it("keep a fresh schema of a service that once copied them identical to a new one", async () => {
    const { applied, pool } = await apply({
      schema: freshSchema(),
      dir: await serviceDir(),
      shared: [outboxMigrations.recorded, outboxMigrations.current],
    });
    expect(applied).toEqual([
      "20261121000100_outbox",
      "20261121010000_widgets",
      "20261202000000_outbox_trace_context",
      "20261227000000_outbox_shard",
      "20270315000000_outbox",
      "20270315000100_drop_outbox_unpublished",
    ]);
    expect(await outboxShape(pool)).toEqual(await currentShape());
    await expectRelayed(pool, 2);
  });

  it("take over a database that ran a service's own copies, keeping its history and rows", async () => {
    const schema = freshSchema();
    // The release before: the service's folder held the copies, and the database recorded them.
    const before = await apply({ schema, dir: await serviceDir(outboxMigrations.recorded) });
    await inTransaction(before.pool, (client) =>
      enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "written-before" }),
    );
    const after = await apply({
      schema,
      dir: await serviceDir(),
      shared: [outboxMigrations.recorded, outboxMigrations.current],
    });
    expect(after.applied).toEqual([
      "20270315000000_outbox",
      "20270315000100_drop_outbox_unpublished",
    ]);
    const { rows } = await after.pool.query("SELECT id FROM schema_migrations ORDER BY id");
    expect(rows.map((row) => row.id)).toEqual([
      "20261121000100",
      "20261121010000",
      "20261202000000",
      "20261227000000",
      "20270315000000",
      "20270315000100",
    ]);
    expect(await outboxShape(after.pool)).toEqual(await currentShape());
    // The row written before is relayed with the new ones.
    await expectRelayed(after.pool, 2, 1);
  });

  it("take over a database whose one migration made the whole outbox, changing only the index", async () => {
    const schema = freshSchema();
    const own = {
      "20270120000000_outbox.sql": `CREATE TABLE outbox (
  id bigserial PRIMARY KEY, topic text NOT NULL, payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(), published_at timestamptz);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
ALTER TABLE outbox ADD COLUMN headers jsonb;
ALTER TABLE outbox ADD COLUMN shard smallint NOT NULL DEFAULT 0;
CREATE INDEX outbox_unpublished_by_shard ON outbox (shard, id) WHERE published_at IS NULL;`,
    };
    const dir = await serviceDir(undefined, own);
    const before = await apply({ schema, dir });
    await inTransaction(before.pool, (client) =>
      enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "written-before" }),
    );
    const after = await apply({ schema, dir, shared: [outboxMigrations.current] });
    expect(after.applied).toEqual([
      "20270315000000_outbox",
      "20270315000100_drop_outbox_unpublished",
    ]);
    expect(await outboxShape(after.pool)).toEqual(await currentShape());
    await expectRelayed(after.pool, 1, 1);
  });

  it("refuse a service folder that still holds a copy of a file the kit now keeps", async () => {
    const schema = freshSchema();
    await expect(
      migrate(harness.db.url, {
        schema,
        dir: await serviceDir(outboxMigrations.recorded),
        shared: [outboxMigrations.recorded, outboxMigrations.current],
      }),
    ).rejects.toThrow(/two migration files share the timestamp 20261121000100/);
  });
});

type PlanNode = {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
};

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

describe("the relay's and the purge's plans on a filled outbox", () => {
  let pool: Pool;

  beforeAll(async () => {
    pool = (
      await apply({
        schema: freshSchema(),
        dir: await serviceDir(),
        shared: [outboxMigrations.current],
      })
    ).pool;
    // Two days of events, one every second: the first day expired, most of the second day
    // published and kept, the last few thousand unpublished across twelve shards.
    await pool.query(
      `INSERT INTO outbox (topic, payload, created_at, published_at, shard)
       SELECT 'key.issued', '{}', t, CASE WHEN g <= 165000 THEN t END, g % 12
         FROM generate_series(1, 172800) g, LATERAL (SELECT now() - interval '2 days' + g * interval '1 second' AS t) at`,
    );
    await pool.query("ANALYZE outbox");
  });

  /** How the plan of `sql` with `params` reads the outbox: its sequential scans and indexes. */
  async function outboxReads(sql: string, params: unknown[]) {
    const { rows } = await pool.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
    const nodes = planNodes((rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]?.Plan as PlanNode);
    return {
      seqScans: nodes.filter(
        (node) => node["Node Type"] === "Seq Scan" && node["Relation Name"] === "outbox",
      ).length,
      indexes: [...new Set(nodes.flatMap((node) => node["Index Name"] ?? []))].sort(),
    };
  }

  it("find pending shards and claim a batch through the unpublished (shard, id) index", async () => {
    for (const [sql, params] of [
      [OUTBOX_QUERIES.pendingShards, []],
      [OUTBOX_QUERIES.claim, [3, 500]],
    ] as const) {
      expect(await outboxReads(sql, [...params])).toEqual({
        seqScans: 0,
        indexes: ["outbox_unpublished_by_shard"],
      });
    }
  });

  it("mark published and purge through the primary key, never scanning the table", async () => {
    for (const [sql, params] of [
      [OUTBOX_QUERIES.markPublished, [["1", "2", "3"]]],
      [OUTBOX_QUERIES.purge, [86_400, 5_000]],
    ] as const) {
      expect(await outboxReads(sql, [...params])).toEqual({
        seqScans: 0,
        indexes: ["outbox_pkey"],
      });
    }
  });
});
