import { randomUUID } from "node:crypto";
import { copyFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "./migrations.ts";

const CLEARING = "20270110000000_attempts_keep_no_reply.sql";

let db: TestDatabase;
let before: string;

beforeAll(async () => {
  // A database as the release before the clearing migration left it.
  before = await mkdtemp(join(tmpdir(), "dispatcher-migrations-"));
  for (const file of await readdir(migrations.dir)) {
    if (file.endsWith(".sql") && file < CLEARING) {
      await copyFile(join(migrations.dir, file), join(before, file));
    }
  }
  db = await createTestDatabase([{ schema: migrations.schema, dir: before }]);
});
afterAll(async () => {
  await db?.drop();
  await rm(before, { recursive: true, force: true });
});

async function attempt(failure: string | null, error: string | null, excerpt: string | null) {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio,
                             event_type, body, state, last_failure, last_error)
     VALUES ($1::uuid, 'ep_1', 'tn_1', 'wl_1', $1::text, '23-1', 'watchlist.match', '{}', 'dead_letter', $2, $3)`,
    [id, failure, error],
  );
  await db.pool.query(
    `INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, status_code, failure,
                           error, response_excerpt, state)
     VALUES ($1, 0, 1, now(), $2, $3, $4, $5, 'dead_letter')`,
    [id, failure === null ? 500 : null, failure, error, excerpt],
  );
  return id;
}

describe("the migration that stops keeping receivers' answers", () => {
  it("clears every stored reply excerpt and the socket and resolver words of older errors", async () => {
    const answered = await attempt(null, null, "SSH-2.0-OpenSSH_9.6 db-primary.internal");
    const refused = await attempt(
      "network",
      "ECONNREFUSED: connect ECONNREFUSED 203.0.113.9:5432",
      null,
    );
    const resolved = await attempt(
      "blocked_address",
      "billing.internal resolves to a refused address: 10.0.4.7 is a private, loopback, link-local or reserved address",
      null,
    );
    const literal = await attempt("blocked_address", "url must use https", null);

    await migrate(db.url, migrations);

    const { rows } = await db.pool.query<{
      id: string;
      error: string | null;
      response_excerpt: string | null;
      last_error: string | null;
    }>(
      `SELECT a.delivery_id AS id, a.error, a.response_excerpt, d.last_error
         FROM attempts a JOIN deliveries d ON d.id = a.delivery_id`,
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(rows.every((row) => row.response_excerpt === null)).toBe(true);
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
