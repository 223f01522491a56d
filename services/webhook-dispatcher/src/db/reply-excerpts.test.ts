import { randomUUID } from "node:crypto";
import { copyFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { listPartitions } from "@th/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectAttempts } from "./delivery-log.ts";
import { migrations } from "./migrations.ts";
import { ATTEMPTS } from "./partitions.ts";

const CLEARING = "20270110000000_attempts_keep_no_reply.sql";
const DROPPING = "20270312000000_attempts_drop_response_excerpt.sql";

const databases: TestDatabase[] = [];
const folders: string[] = [];

/** A database as the release before the migration `until` left it. */
async function databaseBefore(until: string): Promise<TestDatabase> {
  const before = await mkdtemp(join(tmpdir(), "dispatcher-migrations-"));
  folders.push(before);
  for (const file of await readdir(migrations.dir)) {
    if (file.endsWith(".sql") && file < until) {
      await copyFile(join(migrations.dir, file), join(before, file));
    }
  }
  const db = await createTestDatabase([{ schema: migrations.schema, dir: before }]);
  databases.push(db);
  return db;
}

afterAll(async () => {
  for (const db of databases) {
    await db.drop();
  }
  for (const folder of folders) {
    await rm(folder, { recursive: true, force: true });
  }
});

async function attempt(
  db: TestDatabase,
  failure: string | null,
  error: string | null,
  excerpt: string | null,
  at = "now()",
) {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio,
                             event_type, body, state, last_failure, last_error, created_at)
     VALUES ($1::uuid, 'ep_1', 'tn_1', 'wl_1', $1::text, '23-1', 'watchlist.match', '{}',
             'dead_letter', $2, $3, ${at})`,
    [id, failure, error],
  );
  await db.pool.query(
    `INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, status_code, failure,
                           error, response_excerpt, state)
     VALUES ($1, 0, 1, ${at}, $2, $3, $4, $5, 'dead_letter')`,
    [id, failure === null ? 500 : null, failure, error, excerpt],
  );
  return id;
}

/** The relations of `attempts` (the table and each partition) that still have a reply column. */
async function withReplyColumn(db: TestDatabase): Promise<string[]> {
  const { rows } = await db.pool.query<{ relation: string }>(
    `SELECT t.relid::regclass::text AS relation FROM pg_partition_tree('attempts') t
       JOIN pg_attribute a ON a.attrelid = t.relid
      WHERE a.attname = 'response_excerpt' AND NOT a.attisdropped
      ORDER BY 1`,
  );
  return rows.map((row) => row.relation);
}

describe("the migration that stops keeping receivers' answers", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await databaseBefore(CLEARING);
  });

  it("clears every stored reply excerpt and the socket and resolver words of older errors", async () => {
    const answered = await attempt(db, null, null, "SSH-2.0-OpenSSH_9.6 db-primary.internal");
    const refused = await attempt(
      db,
      "network",
      "ECONNREFUSED: connect ECONNREFUSED 203.0.113.9:5432",
      null,
    );
    const resolved = await attempt(
      db,
      "blocked_address",
      "billing.internal resolves to a refused address: 10.0.4.7 is a private, loopback, link-local or reserved address",
      null,
    );
    const literal = await attempt(db, "blocked_address", "url must use https", null);

    await migrate(db.url, migrations);

    // Whole rows: whatever columns the attempts have now, none holds what a receiver sent.
    const { rows } = await db.pool.query<{
      id: string;
      error: string | null;
      last_error: string | null;
      attempt: Record<string, unknown>;
    }>(
      `SELECT a.delivery_id AS id, a.error, d.last_error, to_jsonb(a) AS attempt
         FROM attempts a JOIN deliveries d ON d.id = a.delivery_id`,
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(answered)?.error).toBeNull();
    expect(byId.get(refused)).toMatchObject({
      error: "network error",
      last_error: "network error",
    });
    expect(byId.get(resolved)).toMatchObject({
      error: "host resolves to an address that is not public",
      last_error: "host resolves to an address that is not public",
    });
    expect(byId.get(literal)?.error).toBe("url must use https");
    expect(JSON.stringify(rows)).not.toMatch(/203\.0\.113\.9|10\.0\.4\.7|SSH-2\.0|internal/);
  });
});

describe("the migration that drops the reply column", () => {
  let db: TestDatabase;
  let before: Map<string, string>;
  let inFirst: string;
  let inMonth: string;

  /** Each attempt as JSON with its partition, the reply column left out. */
  async function snapshot(): Promise<Map<string, string>> {
    const { rows } = await db.pool.query<{ id: string; row: string }>(
      `SELECT delivery_id::text AS id,
              (to_jsonb(a) - 'response_excerpt'
                 || jsonb_build_object('partition', tableoid::regclass::text))::text AS row
         FROM attempts a`,
    );
    return new Map(rows.map((row) => [row.id, row.row]));
  }

  beforeAll(async () => {
    db = await databaseBefore(DROPPING);
    // Rows of the first partition (the table as it was) and of a month made ahead; one still
    // carries an answer, as a pod older than decision 0331 wrote during its rollout.
    const month = (await listPartitions(db.pool, ATTEMPTS)).at(-1)?.from;
    inFirst = await attempt(
      db,
      null,
      null,
      "<html>admin console</html>",
      "now() - interval '3 days'",
    );
    inMonth = await attempt(db, "timeout", "timed out", null, `'${month?.toISOString()}'`);
    before = await snapshot();
    await migrate(db.url, migrations);
  });

  it("removes it from the table and every partition, keeping every attempt where it was", async () => {
    expect(new Set([...before.values()].map((row) => JSON.parse(row).partition)).size).toBe(2);
    expect(await withReplyColumn(db)).toEqual([]);
    expect(await snapshot()).toEqual(before);
    expect(await selectAttempts(db.pool, inFirst)).toMatchObject([{ status_code: 500 }]);
    expect(await selectAttempts(db.pool, inMonth)).toMatchObject([{ failure: "timeout" }]);
  });
});
