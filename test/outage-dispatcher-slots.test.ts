// A dispatcher process killed while it holds a tenant's concurrency slots: its slots are free for
// the surviving process within a few seconds (short slot leases renewed by a heartbeat), not
// after the 20 s lease of the delivery rows it had claimed.
import { describe, expect, it } from "vitest";
import { deliveryCounts, recordFault } from "./support/chaos-report.ts";
import { useWebhookStack } from "./support/fault-fixtures.ts";
import { waitFor } from "./support/webhook-stack.ts";

let inFlight = 0;
const fault = useWebhookStack({
  receiver: () => {
    inFlight++;
    setTimeout(() => inFlight--, 300);
    return { status: 200, delayMs: 300 };
  },
});

describe("concurrency slots of a killed dispatcher", () => {
  it("are free for the other process within 5 s of kill -9, with 20 s delivery leases", async () => {
    const tenant = "tn_slots";
    const cap = 4;
    await fault.stack.publishTenant(tenant, "custom", {
      concurrent_webhooks: cap,
      lead_views_per_month: 100_000,
    });
    const api = await fault.stack.startDispatcher();
    await fault.stack.tenantApplied(tenant);
    await fault.stack.subscribe(tenant, "wl_slots", fault.receiver.url);
    await fault.stack.stopDispatcher(api);
    const victim = await fault.stack.spawnDispatcher({ LEASE_MS: "20000" });
    const survivor = await fault.stack.spawnDispatcher({ LEASE_MS: "20000" });

    const matches = Array.from({ length: 120 }, () => fault.stack.match(tenant, "wl_slots"));
    await fault.stack.publishMatches(matches);
    await waitFor(() => fault.receiver.received.length >= 16 && inFlight === cap, {
      what: "both processes delivering at the cap",
    });
    victim.kill("SIGKILL");
    const killedAt = Date.now();
    // The victim's requests in flight at the receiver end within 300 ms; after that only the
    // survivor sends, and it reaches the cap only once the victim's slots are free again.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await waitFor(() => inFlight === cap, {
      timeoutMs: 15_000,
      intervalMs: 10,
      what: "the survivor at the tenant's cap",
    });
    const recoveredMs = Date.now() - killedAt;
    expect(recoveredMs).toBeLessThan(5_000);

    // The victim's claimed rows come back when their 20 s leases end: nothing is lost.
    const unique = () => new Set(fault.receiver.received.map((r) => r.webhookId));
    await waitFor(() => unique().size >= matches.length, {
      timeoutMs: 45_000,
      what: "every webhook id",
    });
    const ids = unique();
    recordFault({
      fault: "kill -9 of one of two dispatchers",
      ...deliveryCounts(matches.length, {
        received: ids.size,
        duplicates: fault.receiver.received.length - ids.size,
        lost: matches.length - ids.size,
      }),
      recoveryMs: recoveredMs,
    });
    survivor.kill("SIGTERM");
  }, 90_000);
});
