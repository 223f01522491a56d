// The poll horizon as Postgres reports it: a writing transaction left open holds it, and how
// long it has shows in the samples; once it ends, nothing holds polls back.
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PollHorizon } from "../domain/poll-horizon.ts";
import { migrations } from "./migrations.ts";
import { snapshotBounds } from "./poll-horizon.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
});
afterAll(() => db.drop());

describe("the poll horizon", () => {
  it("stays on a writing transaction left open, for as long as it is open, and lets go when it ends", async () => {
    const writer = await db.pool.connect();
    try {
      await writer.query("BEGIN");
      const { rows } = await writer.query<{ id: string }>(
        "SELECT pg_current_xact_id()::text AS id",
      );
      const id = rows[0]?.id as string;
      // Other tests' transactions older than this one may still be open for a moment.
      await expect
        .poll(async () => (await snapshotBounds(db.pool)).xmin, { timeout: 30_000 })
        .toBe(id);
      // A transaction that began after it and ended: held back from polls while it is open.
      await db.pool.query("SELECT pg_current_xact_id()");
      const horizon = new PollHorizon();
      horizon.observe(await snapshotBounds(db.pool), 0);
      expect(horizon.observe(await snapshotBounds(db.pool), 600_000)).toBe(600);
      await writer.query("COMMIT");
      await expect
        .poll(async () => (await snapshotBounds(db.pool)).xmin, { timeout: 30_000 })
        .not.toBe(id);
      expect(horizon.observe(await snapshotBounds(db.pool), 660_000)).toBe(0);
    } finally {
      await writer.query("ROLLBACK").catch(() => {});
      writer.release();
    }
  });
});
