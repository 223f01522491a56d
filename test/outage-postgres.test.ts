// Postgres going away under a running dispatcher: its backends are terminated mid-delivery (what a
// Postgres restart or failover does to every connection, "terminating connection due to
// administrator command"), and the dispatcher process stays up and delivers every webhook id.
import type { ChildProcess } from "node:child_process";
import { describe, expect, it } from "vitest";
import { deliveryCounts, recordFault } from "./support/chaos-report.ts";
import { useWebhookStack } from "./support/fault-fixtures.ts";
import { waitFor } from "./support/webhook-stack.ts";

const fault = useWebhookStack({ receiver: () => ({ status: 200, delayMs: 20 }) });

/** Terminates every backend the child process holds, idle, checked out or mid-query. */
async function terminateBackendsOf(child: ChildProcess): Promise<number> {
  const { rows } = await fault.stack.pool.query<{ n: number }>(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = $1`,
    [`dispatcher-child-${child.pid}`],
  );
  return rows[0]?.n ?? 0;
}

describe("a Postgres connection loss mid-delivery", () => {
  it("leaves the dispatcher running, and every webhook id is delivered once Postgres answers again", async () => {
    const tenant = "tn_pg_outage";
    const { child, exited, matches } = await fault.deliveriesUnderWay({
      tenant,
      watchlist: "wl_pg",
      count: 400,
      underWay: 40,
      leaseMs: 2000,
    });
    let terminated = 0;
    for (let round = 0; round < 4; round++) {
      terminated += await terminateBackendsOf(child);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(terminated).toBeGreaterThan(0);
    const tally = await fault.expectEveryDelivery(tenant, matches.length, exited);
    recordFault({
      fault: "Postgres backends terminated mid-delivery",
      ...deliveryCounts(matches.length, tally),
    });
    await waitFor(
      async () =>
        (
          await fault.stack.pool.query(
            "SELECT 1 FROM dispatcher.deliveries WHERE tenant_id = $1 HAVING bool_and(state = 'complete')",
            [tenant],
          )
        ).rowCount,
      { timeoutMs: 20_000, what: "every delivery recorded complete" },
    );
    expect(exited()).toBeUndefined();
    child.kill("SIGTERM");
  }, 90_000);
});
