// A delivery's payload holds lead data (address, owner, mailing state, values). Through the
// gateway and a webhook dispatcher on real Postgres, Redis and Kafka: the delivery log shows the
// payload of a delivery that was charged (a copy of a lead paid for) and, for one never charged
// (dead-lettered, parked for quota), only its status, timing and folio. Its payload is then a lead
// read of its own, metered like a dashboard expansion.
import type { AddressInfo } from "node:net";
import { matchFound as sampleMatch } from "@th/contracts/samples";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

let hooks: WebhookStack;
let edge: EdgeStack;
let receiver: Receiver;
/** Folios whose deliveries the receiver refuses with 410 (dead-lettered at once, never charged). */
const refused = new Set<string>();

beforeAll(async () => {
  hooks = await startWebhookStack();
  const dispatcher = await hooks.startDispatcher();
  if (!dispatcher.http) {
    throw new Error("the dispatcher has no HTTP app");
  }
  await dispatcher.http.listen({ port: 0, host: "127.0.0.1" });
  const port = (dispatcher.http.server.address() as AddressInfo).port;
  edge = await startEdgeStack({ gatewayEnv: { DISPATCHER_URL: `http://127.0.0.1:${port}` } });
  receiver = await startReceiver(({ body }) =>
    [...refused].some((folio) => body.includes(folio)) ? 410 : 200,
  );
});

afterAll(async () => {
  await receiver?.close();
  await edge?.close();
  await hooks?.close();
});

/** A match whose lead fields are unmistakable, so a response that carries them is caught. */
function matchOf(tenantId: string, watchlistId: string, name: string) {
  const folio = `23-${name}`;
  return hooks.match(tenantId, watchlistId, {
    match: {
      ...sampleMatch.match,
      folio,
      address: `${name} HARBOR WAY, MIAMI, FL 33101`,
      owner: { name: `OWNER OF ${name}`, mailing_state: "NY" },
    },
  });
}

async function deliveryIn(matchId: string, states: string[]) {
  return waitFor(
    async () =>
      (
        await hooks.pool.query(
          "SELECT id, folio, state FROM dispatcher.deliveries WHERE match_id = $1 AND state = ANY($2)",
          [matchId, states],
        )
      ).rows[0] as { id: string; folio: string; state: string } | undefined,
    { what: `delivery of ${matchId} in ${states.join(" or ")}` },
  );
}

const remaining = (response: { headers: Record<string, unknown> }) =>
  Number(response.headers["x-quota-lead-views-remaining"]);

describe("the delivery log, with lead data in every payload", () => {
  it("Lead-view: shows a payload only for a delivery that was charged; revealing another costs one lead-view, once a UTC day, and 402 when none remain", async () => {
    const tenant = await edge.startTrial("custom");
    await edge.setCustomLimits(tenant.tenantId, {
      lead_views_per_month: 2,
      rate_per_minute: 100_000,
    });
    // The dispatcher's own view of the tenant: two lead-views for its deliveries.
    await hooks.publishTenant(tenant.tenantId, "custom", { lead_views_per_month: 2 });
    await hooks.tenantApplied(tenant.tenantId);
    const watchlist = "wl_payloads";
    const base = `/v1/watchlists/${watchlist}/webhooks`;
    const subscribed = await edge.request("POST", base, {
      key: tenant.key,
      body: { url: receiver.url, events: ["watchlist.match"] },
    });
    expect(subscribed.statusCode).toBe(201);
    const log = `${base}/${subscribed.json().id}/deliveries`;
    const get = (path: string) => edge.request("GET", path, { key: tenant.key });

    // Charged: delivered (2xx), one lead-view of the dispatcher's.
    const paid = matchOf(tenant.tenantId, watchlist, "PAID");
    // Never charged: refused by the receiver, dead-lettered at once.
    const dead = matchOf(tenant.tenantId, watchlist, "DEAD");
    refused.add(dead.match.folio);
    await hooks.publishMatches([paid, dead]);
    const charged = await deliveryIn(paid.match_id, ["complete"]);
    const deadLetter = await deliveryIn(dead.match_id, ["dead_letter"]);
    // Never charged: the tenant's deliveries are over its quota and wait for the reset.
    await hooks.publishTenant(tenant.tenantId, "custom", { lead_views_per_month: 1 });
    await hooks.tenantApplied(tenant.tenantId);
    const over = matchOf(tenant.tenantId, watchlist, "OVER");
    await hooks.publishMatches([over]);
    const parked = await deliveryIn(over.match_id, ["parked"]);

    // The log: status, timing and folio; a payload only where the delivery was charged.
    const listed = await get(`${log}?limit=50`);
    expect(listed.statusCode).toBe(200);
    expect(listed.body).not.toMatch(/OWNER OF|HARBOR WAY/);
    const paidDetail = await get(`${log}/${charged.id}`);
    expect(paidDetail.json().body).toContain("OWNER OF PAID");
    for (const [delivery, name, state] of [
      [deadLetter, "DEAD", "dead_letter"],
      [parked, "OVER", "parked"],
    ] as const) {
      const detail = await get(`${log}/${delivery.id}`);
      expect(detail.statusCode).toBe(200);
      expect(detail.json()).toMatchObject({ state, folio: `23-${name}`, body: null });
      expect(detail.body).not.toContain(`OWNER OF ${name}`);
      expect(detail.body).not.toContain(`${name} HARBOR WAY`);
    }
    expect((await get(`${log}/${parked.id}`)).json().parked_reason).toBe("quota_exhausted");

    // Revealing a payload never charged is a lead read: one view, free again the same day.
    const before = remaining(await get("/v1/usage"));
    expect(before).toBe(2);
    const shown = await get(`${log}/${deadLetter.id}/body`);
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toMatchObject({ id: deadLetter.id, folio: "23-DEAD" });
    expect(JSON.parse(shown.json().body).match.owner.name).toBe("OWNER OF DEAD");
    expect(remaining(shown)).toBe(1);
    expect(remaining(await get(`${log}/${deadLetter.id}/body`))).toBe(1);
    expect(remaining(await get(`${log}/${parked.id}/body`))).toBe(0);
    // A charged delivery's payload is a copy of what was paid for: free, even with none left.
    const copy = await get(`${log}/${charged.id}/body`);
    expect(copy.statusCode).toBe(200);
    expect(copy.json().body).toContain("OWNER OF PAID");

    // With the month's views spent, a payload never paid for is refused and not shown.
    const late = matchOf(tenant.tenantId, watchlist, "LATE");
    refused.add(late.match.folio);
    await hooks.publishTenant(tenant.tenantId, "custom", { lead_views_per_month: 5 });
    await hooks.tenantApplied(tenant.tenantId);
    await hooks.publishMatches([late]);
    const lateLetter = await deliveryIn(late.match_id, ["dead_letter"]);
    const refusedRead = await get(`${log}/${lateLetter.id}/body`);
    expect(refusedRead.statusCode).toBe(402);
    expect(refusedRead.json().error).toBe("quota_exceeded");
    expect(refusedRead.body).not.toContain("OWNER OF LATE");
    expect((await get(`${log}/${lateLetter.id}`)).body).not.toContain("OWNER OF LATE");
  }, 60_000);
});
