// A real Postgres restart under a dispatcher process mid-delivery, on a private cluster of this
// test's own (other suites share the machine's Postgres): the dispatcher stays up, deliveries
// resume by themselves once Postgres is back, and every webhook id arrives.
import { describe, expect, it } from "vitest";
import { deliveryCounts, recordFault } from "./support/chaos-report.ts";
import { useWebhookStack } from "./support/fault-fixtures.ts";
import { type PrivatePostgres, startPrivatePostgres } from "./support/private-stores.ts";
import { waitFor } from "./support/webhook-stack.ts";

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
    const { child, exited, matches } = await fault.deliveriesUnderWay({
      tenant,
      watchlist: "wl_restart",
      count: 600,
      underWay: 40,
      leaseMs: 3000,
    });
    const { seenWhileDown, backAt } = await fault.awayForTwoSeconds(
      () => postgres.stop(),
      () => postgres.start(),
    );
    await waitFor(() => exited() ?? fault.receiver.received.length > seenWhileDown, {
      timeoutMs: 30_000,
      what: "a delivery after Postgres returned",
    });
    const resumedMs = Date.now() - backAt;
    expect(exited()).toBeUndefined();
    expect(resumedMs).toBeLessThan(10_000);

    const tally = await fault.expectEveryDelivery(tenant, matches.length, exited);
    recordFault({
      fault: "Postgres restart (2 s down) mid-delivery",
      ...deliveryCounts(matches.length, tally),
      recoveryMs: resumedMs,
    });
    child.kill("SIGTERM");
  }, 120_000);
});
