// A webhook delivery is a paid read: a tenant suspended for a payment that failed past its grace
// period gets none, and every delivery held for it goes out as soon as it pays.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

let stack: WebhookStack;
let receiver: Receiver;

beforeAll(async () => {
  stack = await startWebhookStack();
  receiver = await startReceiver(() => 200);
});

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

async function deliveries(tenantId: string) {
  const { rows } = await stack.pool.query<{ state: string; parked_reason: string | null }>(
    "SELECT state, parked_reason FROM dispatcher.deliveries WHERE tenant_id = $1",
    [tenantId],
  );
  return rows;
}

describe("a suspended tenant's webhooks", () => {
  it("are held while it is suspended (its matches cost lead-views) and delivered once it pays, a past-due tenant's meanwhile going out", async () => {
    await stack.startDispatcher();
    const tenant = "tn_suspended";
    await stack.publishTenant(tenant, "operator");
    await stack.tenantApplied(tenant);
    await stack.subscribe(tenant, "wl_suspended", receiver.url);

    // Past due, within the grace period: deliveries go on.
    await stack.publishTenant(tenant, "operator", {}, { standing: "past_due" });
    await stack.tenantApplied(tenant);
    await stack.publishMatches([stack.match(tenant, "wl_suspended")]);
    await waitFor(() => receiver.received.length === 1, { what: "the past-due delivery" });

    await stack.publishTenant(tenant, "operator", {}, { standing: "suspended" });
    await stack.tenantApplied(tenant);
    await stack.publishMatches([
      stack.match(tenant, "wl_suspended"),
      stack.match(tenant, "wl_suspended"),
    ]);
    await waitFor(
      async () => (await deliveries(tenant)).filter((row) => row.state === "parked").length === 2,
      { what: "two deliveries held" },
    );
    expect(
      (await deliveries(tenant))
        .filter((row) => row.state === "parked")
        .map((row) => row.parked_reason),
    ).toEqual(["tenant_suspended", "tenant_suspended"]);
    expect(receiver.received).toHaveLength(1);

    // The payment succeeded: the keys service publishes the tenant in good standing again.
    await stack.publishTenant(tenant, "operator", {}, { standing: "good" });
    await waitFor(() => receiver.received.length === 3, { what: "the held deliveries sent" });
  });
});
