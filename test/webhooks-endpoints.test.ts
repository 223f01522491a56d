// Webhook endpoints (subscribe, list, get, delete, secret once), SSRF refusals at subscribe and
// at delivery (DNS re-binding), secrets sealed at rest, rotation that retires, compromise rotation,
// replay keeping the webhook id, bulk replay of dead letters, the delivery log, production refusal.
import { randomUUID } from "node:crypto";
import { contracts } from "@th/contracts";
import { readConfig } from "@th/webhook-dispatcher/config";
import { verifySignature } from "@th/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DELETED_WATCHLISTS,
  FOREIGN_WATCHLIST,
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

let stack: WebhookStack;
let receiver: Receiver;
const TENANT = "tn_endpoints";
let answer = 200;

beforeAll(async () => {
  stack = await startWebhookStack();
  await stack.startDispatcher();
  await stack.publishTenant(TENANT, "operator");
  await stack.tenantApplied(TENANT);
  receiver = await startReceiver(() => answer);
});

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

async function deliverAndWait(watchlist: string, states = ["complete"]) {
  const match = stack.match(TENANT, watchlist);
  await stack.publishMatches([match]);
  return waitFor(
    async () =>
      (
        await stack.pool.query(
          "SELECT * FROM dispatcher.deliveries WHERE match_id = $1 AND state = ANY($2)",
          [match.match_id, states],
        )
      ).rows[0],
    { what: `delivery of ${match.match_id}` },
  );
}

describe("webhook endpoints", () => {
  it("subscribe answers 201 with a whsec_ secret once; list and get never show it; delete removes it", async () => {
    const created = await stack.call(TENANT, "POST", "/watchlists/wl_crud/webhooks", {
      url: receiver.url,
      events: ["watchlist.match"],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ url: receiver.url, events: ["watchlist.match"] });
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const list = await stack.call(TENANT, "GET", "/watchlists/wl_crud/webhooks");
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(JSON.stringify(list.body)).not.toContain("whsec_");
    const got = await stack.call(TENANT, "GET", `/watchlists/wl_crud/webhooks/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    // Another tenant sees nothing.
    const foreign = await stack.call(
      "tn_other",
      "GET",
      `/watchlists/wl_crud/webhooks/${created.body.id}`,
    );
    expect(foreign.status).toBe(404);
    const removed = await stack.call(
      TENANT,
      "DELETE",
      `/watchlists/wl_crud/webhooks/${created.body.id}`,
    );
    expect(removed.status).toBe(204);
    const gone = await stack.call(TENANT, "GET", `/watchlists/wl_crud/webhooks/${created.body.id}`);
    expect(gone.status).toBe(404);
  });

  it("accepts only watchlist.match, and only the caller's own watchlists", async () => {
    const wrongEvent = await stack.call(TENANT, "POST", "/watchlists/wl_x/webhooks", {
      url: receiver.url,
      events: ["watchlist.deleted"],
    });
    expect(wrongEvent.status).toBe(400);
    const foreign = await stack.call(TENANT, "POST", `/watchlists/${FOREIGN_WATCHLIST}/webhooks`, {
      url: receiver.url,
      events: ["watchlist.match"],
    });
    expect(foreign.status).toBe(404);
  });

  it("go with their watchlist: once it is deleted they are not found, listed or rotated, but can be removed", async () => {
    const created = await stack.subscribe(TENANT, "wl_gone", receiver.url);
    const path = "/watchlists/wl_gone/webhooks";
    expect((await stack.call(TENANT, "GET", path)).status).toBe(200);
    DELETED_WATCHLISTS.add("wl_gone");
    try {
      for (const [method, url] of [
        ["GET", path],
        ["GET", `${path}/${created.id}`],
        ["POST", `${path}/${created.id}:rotate`],
        ["GET", `${path}/${created.id}/deliveries`],
      ] as const) {
        const response = await stack.call(TENANT, method, url);
        expect(response.status, `${method} ${url}`).toBe(404);
        expect(response.body.error).toBe("not_found");
      }
      // Removing one still works: it is what stops the deliveries queued for it.
      expect((await stack.call(TENANT, "DELETE", `${path}/${created.id}`)).status).toBe(204);
    } finally {
      DELETED_WATCHLISTS.delete("wl_gone");
    }
  });

  it("an attacker's 20 simultaneous subscribes to one watchlist get five 201s and fifteen 409 conflicts, and only five endpoints exist", async () => {
    const tenant = "tn_endpoint_burst";
    expect(readConfig({}).MAX_ENDPOINTS_PER_WATCHLIST).toBe(5);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        stack.call(tenant, "POST", "/watchlists/wl_burst/webhooks", {
          url: `${receiver.url}?n=${i}`,
          events: ["watchlist.match"],
        }),
      ),
    );
    const statuses = replies.map((reply) => reply.status).sort();
    expect(statuses).toEqual([...new Array(5).fill(201), ...new Array(15).fill(409)]);
    for (const reply of replies.filter((r) => r.status === 409)) {
      expect(reply.body).toMatchObject({
        error: "conflict",
        detail: expect.stringMatching(/watchlist wl_burst already has 5 webhook endpoints/),
      });
      expect(reply.body.secret).toBeUndefined();
    }
    const list = await stack.call(tenant, "GET", "/watchlists/wl_burst/webhooks");
    expect(list.body.data).toHaveLength(5);
  });

  it("stores secrets sealed with AES-256-GCM under a named key", async () => {
    const created = await stack.subscribe(TENANT, "wl_sealed", receiver.url);
    const { rows } = await stack.pool.query(
      "SELECT key_id, nonce, sealed FROM dispatcher.endpoint_secrets WHERE endpoint_id = $1",
      [created.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].key_id).toBe("dev1");
    expect(rows[0].nonce).toHaveLength(12);
    expect(rows[0].sealed.toString("latin1")).not.toContain(created.secret.slice(6));
  });

  it("R5: each endpoint has its own secret, and a delivery to each is signed with its own only", async () => {
    const first = await stack.subscribe(TENANT, "wl_two_secrets", `${receiver.url}/first`);
    const second = await stack.subscribe(TENANT, "wl_two_secrets", `${receiver.url}/second`);
    const elsewhere = await stack.subscribe(TENANT, "wl_other_secret", `${receiver.url}/first`);
    const secrets = [first.secret, second.secret, elsewhere.secret];
    expect(new Set(secrets).size).toBe(3);
    answer = 200;
    const match = stack.match(TENANT, "wl_two_secrets");
    await stack.publishMatches([match]);
    const delivered = await waitFor(
      async () => {
        const got = receiver.received.filter((request) => request.body.includes(match.match_id));
        return got.length >= 2 ? got : undefined;
      },
      { what: "a delivery to each endpoint" },
    );
    const byEndpoint = await stack.pool.query<{ id: string; endpoint_id: string }>(
      "SELECT id, endpoint_id FROM dispatcher.deliveries WHERE match_id = $1",
      [match.match_id],
    );
    for (const row of byEndpoint.rows) {
      const request = delivered.find((each) => each.webhookId === row.id);
      if (!request) {
        throw new Error(`no request for delivery ${row.id}`);
      }
      const own = row.endpoint_id === first.id ? first.secret : second.secret;
      const others = secrets.filter((secret) => secret !== own);
      expect(verifySignature(request.body, request.signature, [own]).ok).toBe(true);
      expect(verifySignature(request.body, request.signature, others).ok).toBe(false);
    }
    expect(byEndpoint.rows.map((row) => row.endpoint_id).sort()).toEqual(
      [first.id, second.id].sort(),
    );
  });
});

describe("SSRF refusals", () => {
  const strict = () =>
    stack.instances[0]?.endpoints as NonNullable<(typeof stack.instances)[0]>["endpoints"];

  it.each([
    ["plain http to a public host", "http://example.com/hook"],
    ["loopback over https", "https://127.0.0.1/hook"],
    ["a private 10/8 address", "https://10.1.2.3/hook"],
    ["a private 192.168/16 address", "https://192.168.0.10/hook"],
    ["a private 172.16/12 address", "https://172.20.0.1/hook"],
    ["link-local cloud metadata", "https://169.254.169.254/latest/meta-data"],
    ["IPv6 loopback", "https://[::1]/hook"],
    ["IPv6 unique-local", "https://[fd00::1]/hook"],
    ["IPv4-mapped IPv6 loopback", "https://[::ffff:127.0.0.1]/hook"],
    ["IPv4-translated IPv6 cloud metadata", "https://[::ffff:0:a9fe:a9fe]/latest/meta-data"],
    ["IPv4-compatible IPv6 cloud metadata", "https://[::a9fe:a9fe]/latest/meta-data"],
    ["NAT64 cloud metadata", "https://[64:ff9b::a9fe:a9fe]/latest/meta-data"],
    ["cloud metadata written in decimal", "https://2852039166/latest/meta-data"],
    ["cloud metadata written in octal", "https://0251.0376.0251.0376/latest/meta-data"],
    ["a name resolving to loopback", "https://localhost/hook"],
    ["credentials in the URL", "https://user:pass@example.com/hook"],
    ["not a URL", "hooks.example.com"],
  ])("refuses %s at subscribe time", async (_name, url) => {
    const stackStrict = await startWebhookStackStrict();
    const reply = await stackStrict.call(TENANT, "POST", "/watchlists/wl_ssrf/webhooks", {
      url,
      events: ["watchlist.match"],
    });
    expect(reply.status).toBe(400);
    expect(reply.body.fields?.[0]?.path).toBe("url");
    expect(strict()).toBeDefined();
  });

  it("the development flag allows plain http to loopback only, and is refused in production", () => {
    const secrets = {
      INTERNAL_SIGNING_SECRET: "a-production-signing-root-of-this-deployment",
      INTERNAL_CALLER_KEYS: `gateway:${"a-production-caller-key-".repeat(2)}`,
      SECRET_KEYS: `k2026:${"ab".repeat(32)}`,
    };
    expect(() =>
      readConfig({ NODE_ENV: "production", WEBHOOK_ALLOW_LOOPBACK_HTTP: "true", ...secrets }),
    ).toThrow(/WEBHOOK_ALLOW_LOOPBACK_HTTP/);
    expect(readConfig({ NODE_ENV: "production", ...secrets }).WEBHOOK_ALLOW_LOOPBACK_HTTP).toBe(
      false,
    );
    expect(() => readConfig({ NODE_ENV: "production" })).toThrow(
      /SECRET_KEYS|INTERNAL_SIGNING_SECRET|INTERNAL_CALLER_KEYS/,
    );
  });

  it("checks the address again at every delivery, so a name re-bound to a private address is refused", async () => {
    // The endpoint passed its check when subscribed; its name now resolves to loopback
    // (re-binding). A dispatcher without the development flag refuses it at connect time.
    const created = await stack.subscribe(TENANT, "wl_rebind", receiver.url);
    const port = new URL(receiver.url).port;
    await stack.pool.query("UPDATE dispatcher.endpoints SET url = $2 WHERE id = $1", [
      created.id,
      `https://localhost:${port}/hooks`,
    ]);
    const first = stack.instances[0];
    if (first) {
      await stack.stopDispatcher(first);
    }
    await stack.startDispatcher({ WEBHOOK_ALLOW_LOOPBACK_HTTP: "false" });
    const before = receiver.received.length;
    const row = await deliverAndWait("wl_rebind", ["dead_letter"]);
    expect(row.dead_letter_reason).toBe("blocked_address");
    expect(row.last_failure).toBe("blocked_address");
    expect(receiver.received.length).toBe(before);
    const last = stack.instances[0];
    if (last) {
      await stack.stopDispatcher(last);
    }
    await stack.startDispatcher();
  });
});

/** The refusal cases need a dispatcher without the loopback flag; it is started once. */
let strictStack: WebhookStack | undefined;
async function startWebhookStackStrict() {
  if (!strictStack) {
    strictStack = await startWebhookStack();
    await strictStack.startDispatcher({ WEBHOOK_ALLOW_LOOPBACK_HTTP: "false" });
  }
  return strictStack;
}
afterAll(async () => {
  await strictStack?.close();
});

describe("Trigger and Delivery contract", () => {
  it("two endpoints subscribed to one watchlist both receive every match", async () => {
    const one = await stack.subscribe(TENANT, "wl_two", `${receiver.url}?endpoint=one`);
    const two = await stack.subscribe(TENANT, "wl_two", `${receiver.url}?endpoint=two`);
    const matches = [1, 2, 3].map(() => stack.match(TENANT, "wl_two"));
    await stack.publishMatches(matches);
    const rows = await waitFor(
      async () => {
        const { rows } = await stack.pool.query<{
          id: string;
          endpoint_id: string;
          match_id: string;
        }>(
          "SELECT id, endpoint_id, match_id FROM dispatcher.deliveries WHERE endpoint_id = ANY($1) AND state = 'complete'",
          [[one.id, two.id]],
        );
        return rows.length === 6 ? rows : undefined;
      },
      { what: "six deliveries" },
    );
    for (const endpoint of [one.id, two.id]) {
      const mine = rows.filter((row) => row.endpoint_id === endpoint);
      expect(mine.map((row) => row.match_id).sort()).toEqual(
        matches.map((match) => match.match_id).sort(),
      );
      for (const row of mine) {
        const body = JSON.parse(receiver.of(row.id)[0]?.body ?? "{}");
        expect(body.event_id).toBe(row.match_id);
      }
    }
  });

  it("gives the receiver about 10 seconds by default: an answer after 9 s completes on the first attempt", async () => {
    expect(readConfig({}).DELIVERY_TIMEOUT_MS).toBe(10_000);
    // The default lease too (the shared test dispatcher's is 4 s, shorter than such an attempt).
    for (const instance of [...stack.instances]) {
      await stack.stopDispatcher(instance);
    }
    const dispatcher = await stack.startDispatcher({
      LEASE_MS: String(readConfig({}).LEASE_MS),
    });
    const slow = await startReceiver(() => ({ status: 200, delayMs: 9_000 }));
    try {
      await stack.subscribe(TENANT, "wl_slow_receiver", slow.url);
      const match = stack.match(TENANT, "wl_slow_receiver");
      await stack.publishMatches([match]);
      const row = await waitFor(
        async () =>
          (
            await stack.pool.query(
              "SELECT * FROM dispatcher.deliveries WHERE match_id = $1 AND state <> 'pending'",
              [match.match_id],
            )
          ).rows[0],
        { what: "the slow delivery settles", timeoutMs: 25_000 },
      );
      expect(row.state).toBe("complete");
      expect(row.attempts).toBe(1);
      expect(slow.received).toHaveLength(1);
    } finally {
      await slow.close();
      await stack.stopDispatcher(dispatcher);
      await stack.startDispatcher();
    }
  }, 40_000);
});

describe("rotation", () => {
  it("E9 and Signature scheme 1: from the moment of rotation, signs with the new secret only, exactly one v1 in every header", async () => {
    const created = await stack.subscribe(TENANT, "wl_rotate", receiver.url);
    const before = await deliverAndWait("wl_rotate");
    const beforeRequest = receiver.of(before.id)[0];
    expect(beforeRequest?.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const rotatedAt = Date.now();
    const rotated = await stack.call(
      TENANT,
      "POST",
      `/watchlists/wl_rotate/webhooks/${created.id}:rotate`,
    );
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.secret);
    // The old secret retired at the rotation, not after an overlap.
    expect(Date.parse(rotated.body.previous_secret_expires_at)).toBeGreaterThanOrEqual(
      rotatedAt - 1_000,
    );
    expect(Date.parse(rotated.body.previous_secret_expires_at)).toBeLessThanOrEqual(Date.now());

    const after = await deliverAndWait("wl_rotate");
    const afterRequest = receiver.of(after.id)[0];
    expect(afterRequest?.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(
      verifySignature(afterRequest?.body ?? "", afterRequest?.signature, [created.secret]).ok,
    ).toBe(false);
    expect(
      verifySignature(afterRequest?.body ?? "", afterRequest?.signature, [rotated.body.secret]).ok,
    ).toBe(true);
    // A receiver cutting over holds both and accepts it.
    expect(
      verifySignature(afterRequest?.body ?? "", afterRequest?.signature, [
        created.secret,
        rotated.body.secret,
      ]).ok,
    ).toBe(true);
  });

  it("a compromise (key.revoked, reason compromise) rotates every endpoint secret of the tenant, once", async () => {
    const tenant = "tn_compromised";
    await stack.publishTenant(tenant, "team");
    await stack.tenantApplied(tenant);
    const a = await stack.subscribe(tenant, "wl_a", receiver.url);
    const b = await stack.subscribe(tenant, "wl_b", receiver.url);
    const revokedAt = new Date().toISOString();
    const revoked = {
      key_id: "key_1",
      tenant_id: tenant,
      key_hash: "h1",
      last4: "abcd",
      member_id: "mb_1",
      label: "ci",
      revoked_by_member_id: "mb_1",
      reason: "compromise" as const,
      revoked_at: revokedAt,
    };
    // Two keys revoked by one compromise, and a redelivery: one rotation per endpoint.
    await stack.harness.bus.publish(contracts.keyRevoked, [
      revoked,
      { ...revoked, key_id: "key_2", key_hash: "h2" },
      revoked,
    ]);
    const secrets = async (id: string) =>
      (
        await stack.pool.query(
          "SELECT retires_at FROM dispatcher.endpoint_secrets WHERE endpoint_id = $1 ORDER BY id",
          [id],
        )
      ).rows;
    await waitFor(
      async () => (await secrets(a.id)).length === 2 && (await secrets(b.id)).length === 2,
      { what: "both endpoints rotated" },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const id of [a.id, b.id]) {
      const rows = await secrets(id);
      expect(rows).toHaveLength(2);
      expect(rows[0].retires_at.getTime()).toBeLessThanOrEqual(Date.now());
      expect(rows[1].retires_at).toBeNull();
    }
    // The old secret no longer signs, and the header carries exactly one signature.
    const row = await deliverAndWaitFor(tenant, "wl_a");
    const request = receiver.of(row.id)[0];
    expect(request?.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(request?.body ?? "", request?.signature, [a.secret]).ok).toBe(false);
  });

  it("a compromise rotates a secret created in the compromise's own millisecond too", async () => {
    const tenant = "tn_compromised_same_ms";
    await stack.publishTenant(tenant, "team");
    await stack.tenantApplied(tenant);
    const endpoint = await stack.subscribe(tenant, "wl_same_ms", receiver.url);
    const secrets = async () =>
      (
        await stack.pool.query<{ created_at: string }>(
          "SELECT created_at::text FROM dispatcher.endpoint_secrets WHERE endpoint_id = $1 ORDER BY id",
          [endpoint.id],
        )
      ).rows;
    // The revocation's timestamp is the secret's own millisecond, as when both happen together.
    const created = new Date((await secrets())[0]?.created_at as string);
    await stack.harness.bus.publish(contracts.keyRevoked, {
      key_id: "key_same_ms",
      tenant_id: tenant,
      key_hash: "h_same_ms",
      last4: "abcd",
      member_id: "mb_1",
      label: "ci",
      revoked_by_member_id: "mb_1",
      reason: "compromise",
      revoked_at: created.toISOString(),
    });
    await waitFor(async () => (await secrets()).length === 2, { what: "the endpoint rotated" });
  });
});

async function deliverAndWaitFor(tenant: string, watchlist: string) {
  const match = stack.match(tenant, watchlist);
  await stack.publishMatches([match]);
  return waitFor(
    async () =>
      (
        await stack.pool.query(
          "SELECT * FROM dispatcher.deliveries WHERE match_id = $1 AND state = 'complete'",
          [match.match_id],
        )
      ).rows[0],
    { what: "delivery" },
  );
}

describe("replay and the delivery log", () => {
  it("replays a dead letter with the same webhook id; bulk-replays dead letters since a time; lists and inspects deliveries", async () => {
    const created = await stack.subscribe(TENANT, "wl_replay", receiver.url);
    answer = 410;
    const since = new Date(Date.now() - 1000).toISOString();
    const dead = await deliverAndWait("wl_replay", ["dead_letter"]);
    const dead2 = await deliverAndWait("wl_replay", ["dead_letter"]);
    answer = 200;
    const base = `/watchlists/wl_replay/webhooks/${created.id}`;

    const replayed = await stack.call(TENANT, "POST", `${base}/deliveries/${dead.id}:replay`);
    expect(replayed.status).toBe(202);
    expect(replayed.body.id).toBe(dead.id);
    await waitFor(async () => (await stack.deliveryOf(dead.id)).state === "complete", {
      what: "replay complete",
    });
    const requests = receiver.of(dead.id);
    expect(requests.map((r) => r.webhookId)).toEqual([dead.id, dead.id]);
    expect(requests[1]?.body).toBe(requests[0]?.body);
    expect((await stack.deliveryOf(dead.id)).replay_no).toBe(1);

    // Replaying something that is not dead-lettered or complete is a conflict.
    const again = await stack.call(
      TENANT,
      "POST",
      `${base}/deliveries/00000000-0000-4000-8000-000000000000:replay`,
    );
    expect(again.status).toBe(404);

    const inverted = await stack.call(TENANT, "POST", `${base}/deliveries:replay`, {
      since,
      until: new Date(Date.parse(since) - 1000).toISOString(),
    });
    expect(inverted.status).toBe(400);
    expect(inverted.body.fields).toEqual([
      { path: "body.until", message: "must be later than since" },
    ]);

    // The same instant written with an offset, as RFC 3339 allows.
    const sinceAtOffset = new Date(Date.parse(since) + 3_600_000)
      .toISOString()
      .replace("Z", "+01:00");
    const bulk = await stack.call(TENANT, "POST", `${base}/deliveries:replay`, {
      since: sinceAtOffset,
    });
    expect(bulk.status).toBe(202);
    expect(bulk.body.replayed).toBe(1);
    expect(bulk.body.delivery_ids).toEqual([dead2.id]);
    await waitFor(async () => (await stack.deliveryOf(dead2.id)).state === "complete", {
      what: "bulk replay complete",
    });

    const log = await stack.call(TENANT, "GET", `${base}/deliveries?limit=1`);
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(1);
    expect(log.body.next_cursor).toBeTruthy();
    const next = await stack.call(
      TENANT,
      "GET",
      `${base}/deliveries?limit=5&cursor=${log.body.next_cursor}`,
    );
    expect(next.body.data).toHaveLength(1);
    const detail = await stack.call(TENANT, "GET", `${base}/deliveries/${dead.id}`);
    expect(detail.status).toBe(200);
    expect(
      detail.body.attempts.map((a: { replay_no: number; status_code: number }) => [
        a.replay_no,
        a.status_code,
      ]),
    ).toEqual([
      [0, 410],
      [1, 200],
    ]);
    // The status is kept; nothing the receiver sent back (its body is "answered 410") is.
    expect(detail.body.attempts[0]).not.toHaveProperty("response_excerpt");
    expect(detail.body.attempts[0].error).toBe("receiver answered 410");
    expect(Object.values(detail.body.attempts[0])).not.toContain("answered 410");
  });

  it("D5: a replay after the 30-day hold is refused, for a real dead letter whose hold expired", async () => {
    const created = await stack.subscribe(TENANT, "wl_hold", receiver.url);
    answer = 410;
    const dead = await deliverAndWait("wl_hold", ["dead_letter"]);
    answer = 200;
    const held = await stack.deliveryOf(dead.id);
    // Held 30 days from the dead letter.
    expect(held.hold_until.getTime() - held.dead_lettered_at.getTime()).toBe(30 * 86_400_000);
    // The hold runs out.
    await stack.pool.query(
      "UPDATE dispatcher.deliveries SET hold_until = now() - interval '1 second' WHERE id = $1",
      [dead.id],
    );
    const sent = receiver.of(dead.id).length;
    const base = `/watchlists/wl_hold/webhooks/${created.id}`;
    const refused = await stack.call(TENANT, "POST", `${base}/deliveries/${dead.id}:replay`);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/30-day hold/);
    const bulk = await stack.call(TENANT, "POST", `${base}/deliveries:replay`, {
      since: new Date(Date.now() - 3_600_000).toISOString(),
    });
    expect(bulk.body.replayed).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.of(dead.id)).toHaveLength(sent);
    expect((await stack.deliveryOf(dead.id)).state).toBe("dead_letter");
  });

  it("pages the delivery log through deliveries created together, each once, newest first; refuses a forged cursor", async () => {
    const created = await stack.subscribe(TENANT, "wl_log_pages", receiver.url);
    answer = 200;
    // One publish: the intake inserts them in one statement, so they share one created_at.
    const matches = Array.from({ length: 12 }, () => stack.match(TENANT, "wl_log_pages"));
    await stack.publishMatches(matches);
    const base = `/watchlists/wl_log_pages/webhooks/${created.id}`;
    await waitFor(
      async () => {
        const { rows } = await stack.pool.query(
          "SELECT 1 FROM dispatcher.deliveries WHERE endpoint_id = $1",
          [created.id],
        );
        return rows.length === 12 ? true : undefined;
      },
      { what: "twelve deliveries" },
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const log = await stack.call(
        TENANT,
        "GET",
        `${base}/deliveries?limit=5${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(log.status).toBe(200);
      seen.push(...log.body.data.map((delivery: { id: string }) => delivery.id));
      cursor = log.body.next_cursor;
      if (!cursor) {
        break;
      }
    }
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
    const forged = Buffer.from(JSON.stringify({ at: "yesterday", id: "x" })).toString("base64url");
    const refused = await stack.call(TENANT, "GET", `${base}/deliveries?cursor=${forged}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("invalid_request");
    // Shaped like a real one, but no such time exists: refused too, not a failed query.
    const impossible = Buffer.from(
      JSON.stringify({ at: "2026-02-30T00:00:00.000000Z", id: randomUUID() }),
    ).toString("base64url");
    const alsoRefused = await stack.call(TENANT, "GET", `${base}/deliveries?cursor=${impossible}`);
    expect(alsoRefused.status).toBe(400);
  });

  it("publishes every attempt on delivery.attempted and dead letters on delivery.dead-letter", async () => {
    const { rows } = await stack.pool.query<{ key: string }>(
      "SELECT delivery_id || '/' || replay_no || '/' || attempt AS key FROM dispatcher.attempts",
    );
    expect(rows.length).toBeGreaterThan(0);
    const published = async () => {
      const attempted = new Set<string>();
      await stack.harness.bus.replay(contracts.deliveryAttempted, {
        onBatch: async (records) => {
          for (const r of records) {
            attempted.add(`${r.value.delivery_id}/${r.value.replay_no}/${r.value.attempt}`);
          }
        },
      });
      return attempted;
    };
    // An attempt's event leaves through the outbox a moment after the attempt is recorded.
    const missing = await waitFor(
      async () => {
        const attempted = await published();
        const absent = rows.filter((row) => !attempted.has(row.key));
        return absent.length === 0 ? absent : undefined;
      },
      { what: "every recorded attempt on delivery.attempted" },
    );
    expect(missing).toEqual([]);
    const { rows: dead } = await stack.pool.query<{ id: string }>(
      "SELECT DISTINCT delivery_id AS id FROM dispatcher.attempts a JOIN dispatcher.deliveries d ON d.id = a.delivery_id WHERE d.dead_lettered_at IS NOT NULL",
    );
    expect(dead.length).toBeGreaterThan(0);
    await waitFor(
      async () => {
        const deadLetters = new Set<string>();
        await stack.harness.bus.replay(contracts.deliveryDeadLetter, {
          onBatch: async (records) => {
            for (const r of records) {
              deadLetters.add(r.value.delivery_id);
            }
          },
        });
        return dead.every((row) => deadLetters.has(row.id));
      },
      { what: "every dead letter on delivery.dead-letter" },
    );
  });
});
