// An idle dispatcher instance helps with the tenants of the other members (a burst that hashed
// unevenly, a member gone quiet) rather than wait for their owner; built not to help, as the
// scale-out bench's one-busy control builds its idle members, it leaves them to their owner.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

const MEMBERS_KEY = "th:wh:members";
/** Sorts before every instance id (a UUID), so it holds bucket 0 of two. */
const OTHER_MEMBER = "0";
/** Shares apply from four waiting tenants per member (decision 0180): eight for two members. */
const TENANTS = 8;

let stack: WebhookStack;

beforeAll(async () => {
  stack = await startWebhookStack();
});

afterAll(async () => {
  await stack?.close();
});

/** Tenants whose `hashtext` bucket of two is 0: all of them the other member's share. */
async function otherMembersTenants(prefix: string): Promise<string[]> {
  const { rows } = await stack.pool.query<{ id: string }>(
    `SELECT id FROM (SELECT $1 || i AS id FROM generate_series(0, 200) i) t
      WHERE (hashtext(id) & 2147483647) % 2 = 0 ORDER BY id LIMIT $2`,
    [prefix, TENANTS],
  );
  return rows.map((row) => row.id);
}

/** A second member that beats as a live instance does, and claims nothing. */
function beatAsOtherMember(): () => Promise<void> {
  const beat = () => stack.harness.redis.zadd(MEMBERS_KEY, Date.now(), OTHER_MEMBER);
  void beat();
  const timer = setInterval(() => void beat(), 300);
  return async () => {
    clearInterval(timer);
    await stack.harness.redis.zrem(MEMBERS_KEY, OTHER_MEMBER);
  };
}

/** Rows of `tenants` parked for their tier: they count as waiting from the first claim on. */
async function parkedDeliveries(tenants: readonly string[]): Promise<void> {
  const parked = async () =>
    (
      await stack.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM dispatcher.deliveries
          WHERE tenant_id = ANY($1::text[]) AND parked_reason = 'tier_without_webhooks'`,
        [tenants],
      )
    ).rows[0]?.n === tenants.length;
  await waitFor(parked, { what: "every delivery parked" });
}

describe("an idle dispatcher instance and the other members' tenants", () => {
  it("delivers a live member's tenants when none of its own are due, and not when built not to help", async () => {
    const receiver = await startReceiver(() => 200);
    let leave = async () => {};
    try {
      const tenants = await otherMembersTenants("tn_help_");
      const setup = await stack.startDispatcher();
      for (const tenant of tenants) {
        await stack.publishTenant(tenant, "team", { lead_views_per_month: 100_000 });
        await stack.tenantApplied(tenant);
        await stack.subscribe(tenant, `wl_${tenant}`, receiver.url);
        await stack.publishTenant(tenant, "starter");
        await stack.tenantApplied(tenant);
      }
      await stack.publishMatches(tenants.map((tenant) => stack.match(tenant, `wl_${tenant}`)));
      await parkedDeliveries(tenants);
      await stack.stopDispatcher(setup);

      leave = beatAsOtherMember();
      const aloof = await stack.startDispatcher({}, { helpOthers: false });
      await waitFor(async () => (await stack.harness.redis.zcard(MEMBERS_KEY)) === 2, {
        what: "two members",
      });
      for (const tenant of tenants) {
        await stack.publishTenant(tenant, "team", { lead_views_per_month: 100_000 });
        await stack.tenantApplied(tenant);
      }
      // Long enough for many claims (every POLL_MS) and wakes: a helping instance sends at once.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(receiver.received).toHaveLength(0);
      await stack.stopDispatcher(aloof);

      const helper = await stack.startDispatcher();
      await waitFor(() => new Set(receiver.received.map((r) => r.webhookId)).size >= TENANTS, {
        timeoutMs: 15_000,
        what: `the other member's ${TENANTS} deliveries`,
      });
      expect(await stack.harness.redis.zscore(MEMBERS_KEY, OTHER_MEMBER)).not.toBeNull();
      await stack.stopDispatcher(helper);
    } finally {
      await leave();
      await receiver.close();
    }
  }, 60_000);
});
