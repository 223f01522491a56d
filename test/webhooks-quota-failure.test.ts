// Lead-views of deliveries when the quota store fails for one tenant: the views reserved for the
// other tenants claimed in the same round go back and are charged, with their
// `leadview.recorded`, when those deliveries are tried again. None is counted and left unrecorded.
import { contracts, type MatchFound } from "@th/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

const HEALTHY = "tn_quota_healthy";
const FAILING = "tn_quota_failing";
let stack: WebhookStack;
let receiver: Receiver;
let ledgerDown = true;

beforeAll(async () => {
  stack = await startWebhookStack();
  // A slow poll: the failing tenant's deliveries, due again a second after each failure, are
  // then claimed when a healthy tenant's delivery wakes the worker, in the same round.
  await stack.startDispatcher(
    { POLL_MS: "1000" },
    {
      // The failing tenant's counter cannot be seeded while its ledger is unreachable.
      loadUsage: async (tenantId) => {
        if (tenantId === FAILING && ledgerDown) {
          throw new Error("ledger unreachable");
        }
        return { used: 0, foliosToday: [] };
      },
    },
  );
  for (const tenant of [HEALTHY, FAILING]) {
    await stack.publishTenant(tenant, "team");
    await stack.tenantApplied(tenant);
  }
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

describe("a quota store failure for one tenant", () => {
  it("leaves no other tenant's lead-view counted without its leadview.recorded", async () => {
    await stack.subscribe(HEALTHY, "wl_healthy", receiver.url);
    await stack.subscribe(FAILING, "wl_failing", receiver.url);
    const failing = [1, 2, 3].map(() => stack.match(FAILING, "wl_failing"));
    await stack.publishMatches(failing);
    // While the failing tenant's deliveries come due again every second, the healthy tenant's
    // arrive one by one, so rounds hold deliveries of both.
    const healthy: MatchFound[] = [];
    for (let i = 0; i < 30; i++) {
      const match = stack.match(HEALTHY, "wl_healthy");
      healthy.push(match);
      await stack.publishMatches([match]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    ledgerDown = false;
    await waitFor(
      async () => {
        const { rows } = await stack.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM dispatcher.deliveries WHERE match_id = ANY($1::text[]) AND state = 'complete'",
          [[...healthy, ...failing].map((match) => match.match_id)],
        );
        return rows[0]?.n === healthy.length + failing.length;
      },
      { timeoutMs: 30_000, what: "every delivery complete" },
    );
    const recorded = new Map<string, number>();
    await waitFor(
      async () => {
        recorded.clear();
        await stack.harness.bus.replay(contracts.leadViewRecorded, {
          onBatch: async (records) => {
            for (const { value } of records) {
              const key = `${value.tenant_id}/${value.folio}`;
              recorded.set(key, (recorded.get(key) ?? 0) + 1);
            }
          },
        });
        return [...healthy, ...failing].every((match) =>
          recorded.has(`${match.tenant_id}/${match.match.folio}`),
        );
      },
      { what: "a leadview.recorded for every delivered folio" },
    );
    for (const match of [...healthy, ...failing]) {
      expect(recorded.get(`${match.tenant_id}/${match.match.folio}`)).toBe(1);
    }
  });
});
