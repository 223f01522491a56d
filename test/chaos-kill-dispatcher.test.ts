// kill -9 of the only dispatcher mid-delivery, then a new dispatcher process: every webhook id
// arrives at least once; the deliveries the dead process had claimed come back when their
// leases end.
import { describe, expect, it } from "vitest";
import { recordFault } from "./support/chaos-report.ts";
import { useWebhookStack } from "./support/fault-fixtures.ts";
import { exitOf, subscribedTenant, waitFor } from "./support/webhook-stack.ts";

const fault = useWebhookStack({ receiver: () => ({ status: 200, delayMs: 10 }) });

describe("kill -9 of the dispatcher mid-delivery", () => {
  it("delivers every webhook id at least once after a new dispatcher starts", async () => {
    const tenant = "tn_kill_dispatcher";
    await subscribedTenant(fault.stack, tenant, "wl_kill", fault.receiver.url);
    const env = { LEASE_MS: "3000" };
    const victim = await fault.stack.spawnDispatcher(env);
    const matches = Array.from({ length: 600 }, () => fault.stack.match(tenant, "wl_kill"));
    await fault.stack.publishMatches(matches);
    await waitFor(() => fault.receiver.received.length >= 60, { what: "deliveries under way" });
    victim.kill("SIGKILL");
    await new Promise((resolve) => victim.once("exit", resolve));
    const killedAt = Date.now();
    // Restarted at once, as a supervisor would: recovery runs from the kill to the new
    // process's first delivery, its start-up included.
    const successor = await fault.stack.spawnDispatcher(env);
    const byTheNewOne = () => fault.receiver.received.filter((request) => request.at > killedAt);
    await waitFor(() => byTheNewOne().length > 5, {
      timeoutMs: 30_000,
      what: "deliveries from the new dispatcher",
    });
    const recoveryMs = (byTheNewOne()[0]?.at ?? Date.now()) - killedAt;
    const exited = exitOf(successor);

    const tally = await fault.tally(tenant, matches.length, exited);
    expect(exited()).toBeUndefined();
    expect(tally.rows).toBe(matches.length);
    expect(tally.missing).toBe(0);
    expect(recoveryMs).toBeLessThan(30_000);
    recordFault({
      fault: "kill -9 of the dispatcher mid-delivery",
      matches: matches.length,
      uniqueDeliveries: tally.received,
      duplicates: tally.duplicates,
      lost: tally.lost,
      fiveHundreds: 0,
      unavailable: 0,
      slowestAnswerMs: null,
      recoveryMs,
      leadViewsCharged: null,
      readsAnswered: null,
    });
    successor.kill("SIGTERM");
  }, 120_000);
});
