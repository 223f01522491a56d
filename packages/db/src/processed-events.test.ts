import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inTransaction } from "./pool.ts";
import { claimEvent } from "./processed-events.ts";
import { createTestDatabase, type TestDatabase } from "./testing.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase([
    { schema: "events", dir: join(import.meta.dirname, "fixtures", "events") },
  ]);
});
afterAll(() => db.drop());

async function apply(eventId: string, fail = false) {
  await inTransaction(db.pool, async (client) => {
    if (!(await claimEvent(client, "ledger", eventId))) {
      return;
    }
    await client.query("INSERT INTO effects (event_id) VALUES ($1)", [eventId]);
    if (fail) {
      throw new Error("crashed after the effect, before commit");
    }
  });
}

async function effectCount(eventId: string) {
  const { rows } = await db.pool.query(
    "SELECT count(*)::int AS n FROM effects WHERE event_id = $1",
    [eventId],
  );
  return rows[0].n as number;
}

describe("claimEvent", () => {
  it("applies a redelivered event's effect once", async () => {
    await apply("e1");
    await apply("e1");
    expect(await effectCount("e1")).toBe(1);
  });

  it("releases the claim when the effect's transaction rolls back, so a retry applies it", async () => {
    await expect(apply("e2", true)).rejects.toThrow("crashed");
    expect(await effectCount("e2")).toBe(0);
    await apply("e2");
    expect(await effectCount("e2")).toBe(1);
  });

  it("keeps claims per consumer", async () => {
    await inTransaction(db.pool, async (client) => {
      expect(await claimEvent(client, "a", "e3")).toBe(true);
      expect(await claimEvent(client, "b", "e3")).toBe(true);
      expect(await claimEvent(client, "a", "e3")).toBe(false);
    });
  });
});
