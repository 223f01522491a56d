// A real Postgres restart under a dispatcher process mid-delivery, on a private cluster of this
// test's own (other suites share the machine's Postgres): the dispatcher stays up, deliveries
// resume by themselves once Postgres is back, and every webhook id arrives.
import type { ChildProcess } from "node:child_process";
import { describe, expect, it } from "vitest";
import { recordFault } from "./support/chaos-report.ts";
import { useWebhookStack } from "./support/fault-fixtures.ts";
import { type PrivatePostgres, startPrivatePostgres } from "./support/private-stores.ts";
import { exitOf, subscribedTenant, waitFor } from "./support/webhook-stack.ts";

let postgres: PrivatePostgres;
const fault = useWebhookStack({
  receiver: () => ({ status: 200, delayMs: 10 }),
  before: async () => {
    postgres = await startPrivatePostgres();
    // The test databases of this file go on the private cluster (each test file runs in a
    // process of its own, so no other file sees this).
    process.env.DATABASE_URL = postgres.url;
    return {};
  },
  after: async () => {
    await postgres?.destroy();
  },
  closeMayFail: true,
});

describe("a Postgres restart with the dispatcher mid-delivery", () => {
  it("leaves the dispatcher running; deliveries resume within seconds of Postgres's return and none is lost", async () => {
    const tenant = "tn_pg_restart";
    await subscribedTenant(fault.stack, tenant, "wl_restart", fault.receiver.url);
    const child: ChildProcess = await fault.stack.spawnDispatcher({ LEASE_MS: "3000" });
    const exited = exitOf(child);

    const matches = Array.from({ length: 600 }, () => fault.stack.match(tenant, "wl_restart"));
    await fault.stack.publishMatches(matches);
    await waitFor(() => fault.receiver.received.length >= 40, { what: "deliveries under way" });
    await postgres.stop();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const seenWhileDown = fault.receiver.received.length;
    await postgres.start();
    const backAt = Date.now();
    await waitFor(() => exited() ?? fault.receiver.received.length > seenWhileDown, {
      timeoutMs: 30_000,
      what: "a delivery after Postgres returned",
    });
    const resumedMs = Date.now() - backAt;
    expect(exited()).toBeUndefined();
    expect(resumedMs).toBeLessThan(10_000);

    const tally = await fault.tally(tenant, matches.length, exited);
    expect(exited()).toBeUndefined();
    expect(tally.rows).toBe(matches.length);
    expect(tally.missing).toBe(0);
    recordFault({
      fault: "Postgres restart (2 s down) mid-delivery",
      matches: matches.length,
      uniqueDeliveries: tally.received,
      duplicates: tally.duplicates,
      lost: tally.lost,
      fiveHundreds: 0,
      unavailable: 0,
      slowestAnswerMs: null,
      recoveryMs: resumedMs,
      leadViewsCharged: null,
      readsAnswered: null,
    });
    child.kill("SIGTERM");
  }, 120_000);
});
