// kill -9 of the only dispatcher mid-delivery, then a new dispatcher process: every webhook id
// arrives at least once; the deliveries the dead process had claimed come back when their
// leases end.
import { describe, expect, it } from "vitest";
import { deliveryCounts, recordFault } from "./support/chaos-report.ts";
import { useWebhookStack } from "./support/fault-fixtures.ts";
import { exitOf, waitFor } from "./support/webhook-stack.ts";

const fault = useWebhookStack({ receiver: () => ({ status: 200, delayMs: 10 }) });

describe("kill -9 of the dispatcher mid-delivery", () => {
  it("delivers every webhook id at least once after a new dispatcher starts", async () => {
    const tenant = "tn_kill_dispatcher";
    const { child: victim, matches } = await fault.deliveriesUnderWay({
      tenant,
      watchlist: "wl_kill",
      count: 600,
      underWay: 60,
      leaseMs: 3000,
    });
    victim.kill("SIGKILL");
    await new Promise((resolve) => victim.once("exit", resolve));
    const killedAt = Date.now();
    // Restarted at once, as a supervisor would: recovery runs from the kill to the new
    // process's first delivery, its start-up included.
    const successor = await fault.stack.spawnDispatcher({ LEASE_MS: "3000" });
    const byTheNewOne = () => fault.receiver.received.filter((request) => request.at > killedAt);
    await waitFor(() => byTheNewOne().length > 5, {
      timeoutMs: 30_000,
      what: "deliveries from the new dispatcher",
    });
    const recoveryMs = (byTheNewOne()[0]?.at ?? Date.now()) - killedAt;
    const exited = exitOf(successor);

    const tally = await fault.expectEveryDelivery(tenant, matches.length, exited);
    expect(recoveryMs).toBeLessThan(30_000);
    recordFault({
      fault: "kill -9 of the dispatcher mid-delivery",
      ...deliveryCounts(matches.length, tally),
      recoveryMs,
    });
    successor.kill("SIGTERM");
  }, 120_000);
});
