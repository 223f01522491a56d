// The authenticated edge end to end: gateway + keys service on real Postgres, Redis and Kafka.
// Each test names the rule of the specification it proves.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { generateApiKey } from "@th/api-keys";
import type { HttpApp } from "@th/service-kit";
import { signedInject } from "@th/service-kit/testing";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import { SIX_HEADERS } from "./support/limit-headers.ts";

const logLines: string[] = [];
let stack: EdgeStack;
let clock = Date.now();

beforeAll(async () => {
  stack = await startEdgeStack({
    logger: createLogger({
      service: "edge-test",
      level: "info",
      destination: { write: (line: string) => void logLines.push(line) },
    }),
    now: () => clock,
  });
});
afterAll(() => stack.close());

function expectSixHeaders(headers: Record<string, unknown>) {
  for (const name of SIX_HEADERS) {
    expect(headers[name], name).toBeDefined();
  }
  expect(new Date(String(headers["x-quota-resets"])).toISOString()).toBe(headers["x-quota-resets"]);
}

describe("Authentication 1: one key as Authorization: Bearer", () => {
  it("authenticates a request carrying a valid key", async () => {
    const tenant = await stack.startTrial("team");
    const response = await stack.request("GET", "/v1/account", { key: tenant.key });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ id: tenant.tenantId, tier: "team" });
  });

  it("takes the scheme name in any case, as HTTP has it", async () => {
    const tenant = await stack.startTrial("team");
    for (const scheme of ["bearer", "BEARER"]) {
      const response = await stack.request("GET", "/v1/account", {
        headers: { authorization: `${scheme} ${tenant.key}` },
      });
      expect(response.statusCode, scheme).toBe(200);
    }
  });

  it("refuses a missing, non-Bearer, malformed or unknown key with 401 in the error shape", async () => {
    const tenant = await stack.startTrial("team");
    const cases: [Record<string, string>, RegExp][] = [
      [{}, /missing API key/],
      [{ authorization: `Basic ${tenant.key}` }, /must be Bearer/],
      // The last checksum character changed (to one it is not already).
      [
        {
          authorization: `Bearer ${tenant.key.slice(0, -1)}${tenant.key.endsWith("x") ? "y" : "x"}`,
        },
        /malformed API key/,
      ],
      [{ authorization: `Bearer ${generateApiKey()}` }, /unknown API key/],
    ];
    for (const [headers, detail] of cases) {
      const response = await stack.request("GET", "/v1/account", { headers, ip: "192.0.2.1" });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({
        error: "unauthorized",
        detail: expect.stringMatching(detail),
      });
    }
  });
});

describe("Authentication 4: the same key works on every surface the tier opens", () => {
  it("answers /v1/me from the edge alone with the key's tenant, member and tier", async () => {
    const tenant = await stack.startTrial("operator");
    const response = await stack.request("GET", "/v1/me", { key: tenant.key });
    expect(response.json()).toEqual({
      tenant_id: tenant.tenantId,
      member_id: tenant.memberId,
      key_id: tenant.keyId,
      tier: "operator",
    });
  });
});

describe("Authentication 2: a key in the URL, query string or body is rejected with 401", () => {
  it("refuses a key in the query string even alongside a valid Authorization header", async () => {
    const tenant = await stack.startTrial("team");
    const response = await stack.request("GET", `/v1/account?api_key=${tenant.key}`, {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toMatch(/never be sent in the URL/);
  });

  it("refuses a percent-encoded key in the query string alongside a valid Authorization header", async () => {
    const tenant = await stack.startTrial("team");
    const encoded = tenant.key.replace("th_live_", "th%5Flive%5F");
    const response = await stack.request("GET", `/v1/account?api_key=${encoded}`, {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toMatch(/never be sent in the URL/);
  });

  it("refuses a key in the path", async () => {
    const tenant = await stack.startTrial("team");
    const response = await stack.request("DELETE", `/v1/team/api-keys/${tenant.key}`, {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(401);
  });

  it("refuses a key in the body and changes nothing", async () => {
    const tenant = await stack.startTrial("team");
    const response = await stack.request("POST", "/v1/team/api-keys", {
      key: tenant.key,
      body: { label: `copy of ${tenant.key}` },
    });
    expect(response.statusCode).toBe(401);
    const listed = await stack.request("GET", "/v1/team/api-keys", { key: tenant.key });
    expect(listed.json().data).toHaveLength(1);
  });

  it("refuses a key in a body of a type no route reads (form-encoded) with 401, not 415", async () => {
    const tenant = await stack.startTrial("team");
    const leaked = await stack.request("POST", "/v1/team/api-keys", {
      key: tenant.key,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `label=x&api_key=${tenant.key}`,
    });
    expect(leaked.statusCode).toBe(401);
    expect(leaked.json().detail).toContain("revoke this key");
    const plain = await stack.request("POST", "/v1/team/api-keys", {
      key: tenant.key,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "label=x",
    });
    expect(plain.statusCode).toBe(415);
    expect(plain.json()).toMatchObject({ error: "unsupported_media_type" });
    for (const body of [`{"label":"x","note":"${tenant.key}"}`, '{"label":"x"}']) {
      const text = await stack.request("POST", "/v1/team/api-keys", {
        key: tenant.key,
        headers: { "content-type": "text/plain" },
        body,
      });
      expect(text.statusCode).toBe(body.includes(tenant.key) ? 401 : 415);
    }
    const listed = await stack.request("GET", "/v1/team/api-keys", { key: tenant.key });
    expect(listed.json().data).toHaveLength(1);
  });

  it("refuses a key hidden by a member named twice, whichever member JSON would keep", async () => {
    const tenant = await stack.startTrial("team");
    for (const body of [
      `{"folios":["${tenant.key}"],"folios":["23-0101"]}`,
      `{"folios":["23-0101"],"folios":["${tenant.key}"]}`,
    ]) {
      const response = await stack.request("POST", "/v1/leads/batch", {
        key: tenant.key,
        headers: { "content-type": "application/json" },
        body,
      });
      expect(response.statusCode, body).toBe(401);
      expect(response.json().detail).toContain("revoke this key");
    }
  });

  it("refuses a key in the body of a GET, which no route reads", async () => {
    const tenant = await stack.startTrial("team");
    const response = await stack.request("GET", "/v1/leads/23-0101", {
      key: tenant.key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: tenant.key }),
    });
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toContain("revoke this key");
  });

  it("refuses a key written with JSON escapes", async () => {
    const tenant = await stack.startTrial("team");
    const response = await stack.request("POST", "/v1/team/api-keys", {
      key: tenant.key,
      headers: { "content-type": "application/json" },
      body: `{"label":"${tenant.key.replace("th_live_", "th\\u005flive_")}"}`,
    });
    expect(response.statusCode).toBe(401);
    const listed = await stack.request("GET", "/v1/team/api-keys", { key: tenant.key });
    expect(listed.json().data).toHaveLength(1);
  });

  it("refuses a key in the body of a public endpoint too", async () => {
    const response = await stack.request("POST", "/v1/public/contact", {
      body: { name: "x", email: "x@y.co", message: generateApiKey() },
      ip: "192.0.2.77",
    });
    expect(response.statusCode).toBe(401);
  });
});

describe("Errors 400: a JSON body that names a member twice is refused, naming the member", () => {
  it("starts no trial when tier is sent twice, and says which member", async () => {
    const company = `Twice ${Date.now()}`;
    const response = await stack.request("POST", "/v1/public/trials", {
      ip: "192.0.2.90",
      headers: { "content-type": "application/json" },
      body: `{"tier":"starter","company":"${company}","admin_email":"twice@acme.test","payment_method":"pm_card_visa","tier":"custom"}`,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      error: "invalid_request",
      detail: expect.stringContaining("body.tier"),
      fields: [{ path: "body.tier", message: "duplicate member" }],
    });
    const { rows } = await stack.harness.db
      .poolFor("keys")
      .query("SELECT 1 FROM tenants WHERE company = $1", [company]);
    expect(rows).toHaveLength(0);
  });
});

describe("Authentication 3 and Errors 429: keys share the tenant's rolling-minute pool", () => {
  it("allows exactly the limit when three keys of one tenant burst twice the limit in parallel", async () => {
    const tenant = await stack.startTrial("team");
    const second = (
      await stack.request("POST", "/v1/team/api-keys", { key: tenant.key, body: { label: "b" } })
    ).json().secret;
    const third = (
      await stack.request("POST", "/v1/team/api-keys", { key: tenant.key, body: { label: "c" } })
    ).json().secret;
    clock += 61_000;
    const keys = [tenant.key, second, third];
    const responses = await Promise.all(
      Array.from({ length: 1200 }, (_, i) =>
        stack.request("GET", "/v1/account", { key: keys[i % 3] }),
      ),
    );
    const ok = responses.filter((response) => response.statusCode === 200).length;
    const limited = responses.filter((response) => response.statusCode === 429);
    expect(ok).toBe(600);
    expect(limited).toHaveLength(600);
    const body = limited[0]?.json();
    expect(body).toMatchObject({ error: "rate_limited", detail: expect.any(String) });
    expect(Number.isInteger(body.retry_after_seconds)).toBe(true);
    expect(limited[0]?.headers["retry-after"]).toBe(String(body.retry_after_seconds));
    expectSixHeaders(limited[0]?.headers ?? {});
    expect(limited[0]?.headers["x-ratelimit-remaining"]).toBe("0");
  });

  it("extends the cool-down when a client retries immediately after 429", async () => {
    const tenant = await stack.startTrial("starter");
    const start = clock + 61_000;
    clock = start;
    for (let i = 0; i < 300; i++) {
      expect((await stack.request("GET", "/v1/account", { key: tenant.key })).statusCode).toBe(200);
    }
    clock = start + 1_000;
    const first = await stack.request("GET", "/v1/account", { key: tenant.key });
    expect(first.statusCode).toBe(429);
    expect(first.json().retry_after_seconds).toBe(59);
    clock = start + 30_000;
    for (let i = 0; i < 300; i++) {
      await stack.request("GET", "/v1/account", { key: tenant.key });
    }
    // Past the minute of the first 300, but the refused retries still fill the window.
    clock = start + 61_000;
    const later = await stack.request("GET", "/v1/account", { key: tenant.key });
    expect(later.statusCode).toBe(429);
    expect(later.json().retry_after_seconds).toBeGreaterThanOrEqual(29);
    clock = start + 91_000;
    expect((await stack.request("GET", "/v1/account", { key: tenant.key })).statusCode).toBe(200);
  });
});

describe("Rate-limit headers: the six headers on every response to a tenant, success or error", () => {
  it("are on a 200, a 403 and a 404, with the tier's caps and the next billing anniversary", async () => {
    const tenant = await stack.startTrial("starter");
    clock += 61_000;
    const ok = await stack.request("GET", "/v1/account", { key: tenant.key });
    expectSixHeaders(ok.headers);
    expect(ok.headers["x-ratelimit-limit"]).toBe("300");
    expect(ok.headers["x-ratelimit-remaining"]).toBe("299");
    expect(Number(ok.headers["x-ratelimit-reset"])).toBe(Math.ceil((clock + 60_000) / 1000));
    expect(ok.headers["x-quota-lead-views-limit"]).toBe("500");
    expect(ok.headers["x-quota-lead-views-remaining"]).toBe("500");
    expect(new Date(String(ok.headers["x-quota-resets"])).getTime()).toBeGreaterThan(clock);
    const forbidden = await stack.request("GET", "/v1/team/api-keys", { key: tenant.key });
    expect(forbidden.statusCode).toBe(403);
    expectSixHeaders(forbidden.headers);
    const missing = await stack.request("GET", "/v1/nothing-here", { key: tenant.key });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toBe("not_found");
    expectSixHeaders(missing.headers);
  });

  it("are on a 405 for a method the path does not take, with the methods it does in Allow", async () => {
    const tenant = await stack.startTrial("starter");
    const response = await stack.request("DELETE", "/v1/leads/23-0101", { key: tenant.key });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe("GET");
    expect(response.json().error).toBe("method_not_allowed");
    expectSixHeaders(response.headers);
  });

  it("are on a 400 for a path parameter longer than the route takes", async () => {
    const tenant = await stack.startTrial("starter");
    const response = await stack.request("GET", `/v1/leads/23-${"9".repeat(200)}`, {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().fields).toEqual([{ path: "params.folio", message: expect.any(String) }]);
    expectSixHeaders(response.headers);
  });

  it("are on a 404 outside /v1 too when the request carries a key, which must be valid", async () => {
    const tenant = await stack.startTrial("starter");
    const missing = await stack.request("GET", "/v2/leads", { key: tenant.key });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toBe("not_found");
    expectSixHeaders(missing.headers);
    const unknown = await stack.request("GET", "/v2/leads", {
      key: generateApiKey(),
      ip: "192.0.2.202",
    });
    expect(unknown.statusCode).toBe(401);
    const anonymous = await stack.request("GET", "/v2/leads", { ip: "192.0.2.202" });
    expect(anonymous.statusCode).toBe(404);
    // No tenant and no window: the six say so (0, nothing metered) rather than being absent.
    expect(anonymous.headers["x-ratelimit-limit"]).toBe("0");
    expect(anonymous.headers["x-quota-lead-views-limit"]).toBe("0");
    // Another scheme (a proxy's Basic credentials, say) is none of the edge's business there.
    const basic = await stack.request("GET", "/favicon.ico", {
      ip: "192.0.2.203",
      headers: { authorization: "Basic dXNlcjpwYXNz" },
    });
    expect(basic.statusCode).toBe(404);
  });

  it("carry the client's failed-authentication window on 401, where no tenant is known", async () => {
    const response = await stack.request("GET", "/v1/account", { ip: "192.0.2.200" });
    expect(response.statusCode).toBe(401);
    expect(response.headers["x-ratelimit-limit"]).toBe("60");
    expect(response.headers["x-quota-lead-views-limit"]).toBe("0");
  });

  it("limit failed authentication per client IP so keys cannot be guessed at speed", async () => {
    let last = 0;
    for (let i = 0; i < 61; i++) {
      last = (
        await stack.request("GET", "/v1/account", { key: generateApiKey(), ip: "192.0.2.201" })
      ).statusCode;
    }
    expect(last).toBe(429);
  });
});

describe("Authentication 5 and Errors 403: a tier mismatch returns 403 with an upgrade URL", () => {
  it("refuses the management API to Starter and Operator with tier_required and upgrade_url", async () => {
    for (const tier of ["starter", "operator"] as const) {
      const tenant = await stack.startTrial(tier);
      const response = await stack.request("POST", "/v1/team/api-keys", {
        key: tenant.key,
        body: { label: "x" },
      });
      expect(response.statusCode).toBe(403);
      const body = response.json();
      expect(body.error).toBe("tier_required");
      expect(new URL(body.upgrade_url).searchParams.get("to")).toBe("team");
    }
  });

  it("applies a tier change made elsewhere within 30 s, from the tenant.changed event", async () => {
    const tenant = await stack.startTrial("starter");
    await stack.gateway.start();
    try {
      expect(
        (await stack.request("GET", "/v1/me", { key: tenant.key })).headers["x-ratelimit-limit"],
      ).toBe("300");
      const keysHttp = stack.keys.http as HttpApp;
      const changed = await keysHttp.inject(
        signedInject(keysHttp, "keys", {
          method: "POST",
          url: "/internal/v1/tenant/tier",
          headers: {
            "x-th-tenant-id": tenant.tenantId,
            "x-th-member-id": tenant.memberId,
            "x-th-key-id": tenant.keyId,
          },
          body: { tier: "custom" },
        }),
      );
      expect(changed?.statusCode).toBe(200);
      await vi.waitFor(
        async () => {
          const response = await stack.request("GET", "/v1/me", { key: tenant.key });
          expect(response.headers["x-ratelimit-limit"]).toBe("1200");
          expect(response.json().tier).toBe("custom");
        },
        { timeout: 30_000, interval: 250 },
      );
    } finally {
      await stack.gateway.stop();
    }
  });

  it("reflects an upgrade in the caps on the next request", async () => {
    const tenant = await stack.startTrial("starter");
    const upgraded = await stack.request("POST", "/v1/account/tier", {
      key: tenant.key,
      body: { tier: "team" },
    });
    expect(upgraded.statusCode).toBe(200);
    const after = await stack.request("GET", "/v1/team/api-keys", { key: tenant.key });
    expect(after.statusCode).toBe(200);
    expect(after.headers["x-ratelimit-limit"]).toBe("600");
    expect(after.headers["x-quota-lead-views-limit"]).toBe("5000");
  });
});

describe("Authentication 6 and the management API: keys issued once, listed without secrets", () => {
  it("issues with 201 {id,label,last4,secret,member_id,revoked} and never shows the secret again", async () => {
    const tenant = await stack.startTrial("team");
    const issued = await stack.request("POST", "/v1/team/api-keys", {
      key: tenant.key,
      body: { label: "deploy" },
    });
    expect(issued.statusCode).toBe(201);
    const key = issued.json();
    expect(key).toMatchObject({ label: "deploy", revoked: false, member_id: tenant.memberId });
    expect(key.last4).toBe(key.secret.slice(-4));
    const listed = await stack.request("GET", "/v1/team/api-keys", { key: key.secret });
    expect(listed.statusCode).toBe(200);
    expect(listed.body).not.toContain(key.secret);
    expect(listed.json().data.map((item: { id: string }) => item.id)).toContain(key.id);
  });

  it("answers 404 for another tenant's key id", async () => {
    const mine = await stack.startTrial("team");
    const theirs = await stack.startTrial("team");
    const response = await stack.request("DELETE", `/v1/team/api-keys/${theirs.keyId}`, {
      key: mine.key,
    });
    expect(response.statusCode).toBe(404);
    expect((await stack.request("GET", "/v1/account", { key: theirs.key })).statusCode).toBe(200);
  });
});

describe("K2 and Authentication 8: no forced expiry, a soft reminder after 90 days", () => {
  it("a 91-day-old key still authenticates, and the listing flags it for the reminder", async () => {
    const tenant = await stack.startTrial("team");
    await stack.harness.db
      .poolFor("keys")
      .query(
        "UPDATE api_keys SET created_at = to_timestamp($2 / 1000.0) - interval '91 days' WHERE id = $1",
        [tenant.keyId, clock],
      );
    await stack.gateway.store.forgetTenant(tenant.tenantId);
    const response = await stack.request("GET", "/v1/account", { key: tenant.key });
    expect(response.statusCode).toBe(200);
    const listed = (await stack.request("GET", "/v1/team/api-keys", { key: tenant.key })).json();
    expect(listed.data[0]).toMatchObject({
      id: tenant.keyId,
      revoked: false,
      rotation_due: true,
    });
    expect(listed.data[0].age_days).toBeGreaterThanOrEqual(91);
  });
});

describe("Versioning: the REST paths carry the major version prefix /v1", () => {
  it("every route of the gateway's router lives under /v1, except /mcp and the dashboard's pages", async () => {
    const { DASHBOARD_ROUTES } = await import("@th/dashboard/routes");
    const { SIGN_UP_ROUTE } = await import("@th/dashboard/sign-up-policy");
    const { DASHBOARD_DIST } = await import("@th/dashboard/dist");
    // The router's own tree: each line a path segment under its parent, with its methods.
    const routes: string[] = [];
    const parents: string[] = [];
    for (const line of (stack.gateway.http?.printRoutes({ commonPrefix: false }) ?? "").split(
      "\n",
    )) {
      const node = /^([│ ]*)[├└]── (\S+)( \(.+\))?$/.exec(line);
      if (!node) {
        continue;
      }
      const depth = (node[1] ?? "").length / 4;
      parents.length = depth;
      const path = `${parents.join("")}${node[2]}`;
      parents.push(node[2] ?? "");
      if (node[3]) {
        routes.push(path);
      }
    }
    expect(routes.length).toBeGreaterThan(30);
    const outside = routes.filter(
      (path) =>
        !path.startsWith("/v1/") &&
        path !== "/mcp" &&
        !(DASHBOARD_ROUTES as readonly string[]).includes(path) &&
        path !== SIGN_UP_ROUTE &&
        // The dashboard's built files, served as they are.
        !existsSync(join(DASHBOARD_DIST, path)),
    );
    expect(outside).toEqual([]);
  });
});

describe("Authentication 7 and the key state table: revocation is immediate", () => {
  it("answers 204 with an empty body, then 401 for that key on every gateway instance", async () => {
    const tenant = await stack.startTrial("team");
    const other = await stack.addGateway();
    const spare = (
      await stack.request("POST", "/v1/team/api-keys", {
        key: tenant.key,
        body: { label: "spare" },
      })
    ).json();
    // Both instances have authorized the key before; the revocation must not wait for any cache.
    expect(
      (await stack.request("GET", "/v1/account", { key: spare.secret, via: other })).statusCode,
    ).toBe(200);
    expect((await stack.request("GET", "/v1/account", { key: spare.secret })).statusCode).toBe(200);
    const revoked = await stack.request("DELETE", `/v1/team/api-keys/${spare.id}`, {
      key: tenant.key,
    });
    expect(revoked.statusCode).toBe(204);
    expect(revoked.body).toBe("");
    expect(
      (await stack.request("GET", "/v1/account", { key: spare.secret, via: other })).statusCode,
    ).toBe(401);
    expect((await stack.request("GET", "/v1/account", { key: spare.secret })).statusCode).toBe(401);
    const listed = (await stack.request("GET", "/v1/team/api-keys", { key: tenant.key })).json()
      .data;
    expect(listed.find((key: { id: string }) => key.id === spare.id).revoked).toBe(true);
  });

  it("stays revoked when another instance races a stale lookup against the revocation", async () => {
    const tenant = await stack.startTrial("team");
    const spare = (
      await stack.request("POST", "/v1/team/api-keys", { key: tenant.key, body: { label: "race" } })
    ).json();
    const other = await stack.addGateway();
    const [, revoke] = await Promise.all([
      stack.request("GET", "/v1/account", { key: spare.secret, via: other }),
      stack.request("DELETE", `/v1/team/api-keys/${spare.id}`, { key: tenant.key }),
    ]);
    expect(revoke.statusCode).toBe(204);
    for (const via of [stack.gateway, other]) {
      expect(
        (await stack.request("GET", "/v1/account", { key: spare.secret, via })).statusCode,
      ).toBe(401);
    }
  });
});

describe("Authentication 9: on suspected compromise every active key is revoked", () => {
  it("revokes all keys, asks for webhook secret rotation and hands the caller a working new key", async () => {
    const tenant = await stack.startTrial("team");
    const second = (
      await stack.request("POST", "/v1/team/api-keys", { key: tenant.key, body: { label: "b" } })
    ).json();
    const response = await stack.request("POST", "/v1/team/security/compromise", {
      key: tenant.key,
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.revoked_key_ids.sort()).toEqual([tenant.keyId, second.id].sort());
    expect(body.webhook_secrets_rotation).toBe("requested");
    expect((await stack.request("GET", "/v1/account", { key: tenant.key })).statusCode).toBe(401);
    expect((await stack.request("GET", "/v1/account", { key: second.secret })).statusCode).toBe(
      401,
    );
    expect(
      (await stack.request("GET", "/v1/account", { key: body.api_key.secret })).statusCode,
    ).toBe(200);
  });
});

describe("Trials and subscriptions", () => {
  it("refuses a cancelled tenant's keys", async () => {
    const tenant = await stack.startTrial("operator");
    expect(
      (await stack.request("POST", "/v1/account/cancel", { key: tenant.key })).statusCode,
    ).toBe(200);
    const response = await stack.request("GET", "/v1/account", { key: tenant.key });
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toMatch(/subscription/);
  });

  it("creates nothing and answers 402 payment_declined for a declined card", async () => {
    const response = await stack.request("POST", "/v1/public/trials", {
      body: {
        tier: "team",
        company: "Nope",
        admin_email: "no@pe.test",
        payment_method: "pm_card_declined",
      },
      ip: "192.0.2.90",
    });
    expect(response.statusCode).toBe(402);
    expect(response.json().error).toBe("payment_declined");
  });
});

describe("Public endpoints", () => {
  it("ignore an Authorization header, even a revoked or malformed one", async () => {
    const response = await stack.request("POST", "/v1/public/contact", {
      headers: { authorization: "Bearer nonsense" },
      body: { name: "Dana", email: "dana@example.test", message: "Custom tier for 12 seats?" },
      ip: "192.0.2.50",
    });
    expect(response.statusCode).toBe(202);
    expect(
      (await stack.request("GET", "/v1/health", { headers: { authorization: "Bearer x" } }))
        .statusCode,
    ).toBe(200);
  });

  it("E2: POST /v1/public/contact ignores a revoked key and a malformed key in Authorization", async () => {
    const tenant = await stack.startTrial("team");
    const second = (
      await stack.request("POST", "/v1/team/api-keys", { key: tenant.key, body: { label: "old" } })
    ).json();
    const revoked = await stack.request("DELETE", `/v1/team/api-keys/${second.id}`, {
      key: tenant.key,
    });
    expect(revoked.statusCode).toBe(204);
    expect((await stack.request("GET", "/v1/me", { key: second.secret })).statusCode).toBe(401);
    for (const authorization of [`Bearer ${second.secret}`, "Bearer th_live_short!", "Basic ??"]) {
      const response = await stack.request("POST", "/v1/public/contact", {
        headers: { authorization },
        body: { name: "Dana", email: "dana@example.test", message: "Custom tier?" },
        ip: "192.0.2.51",
      });
      expect(response.statusCode, authorization).toBe(202);
    }
  });

  it("limit each client IP per rolling minute", async () => {
    let last = await stack.request("POST", "/v1/public/contact", {
      body: { name: "a", email: "a@b.co", message: "hi" },
      ip: "192.0.2.60",
    });
    expect(last.headers["x-ratelimit-limit"]).toBe("30");
    for (let i = 0; i < 30; i++) {
      last = await stack.request("POST", "/v1/public/contact", {
        body: { name: "a", email: "a@b.co", message: "hi" },
        ip: "192.0.2.60",
      });
    }
    expect(last.statusCode).toBe(429);
    expect(last.json().error).toBe("rate_limited");
    expect(last.headers["retry-after"]).toBeDefined();
  });
});

describe("OpenAPI", () => {
  it("publishes every public route with its schemas at /v1/openapi.json and a human page at /v1/docs", async () => {
    const document = (await stack.request("GET", "/v1/openapi.json")).json();
    expect(document.openapi).toBe("3.1.0");
    for (const path of [
      "/v1/team/api-keys",
      "/v1/team/api-keys/{key_id}",
      "/v1/public/trials",
      "/v1/account",
    ]) {
      expect(Object.keys(document.paths)).toContain(path);
    }
    const page = await stack.request("GET", "/v1/docs");
    expect(page.headers["content-type"]).toContain("text/html");
    expect(page.body).toContain("/v1/team/api-keys");
  });
});

describe("Logs", () => {
  it("never contain a full API key", async () => {
    const tenant = await stack.startTrial("team");
    await stack.request("GET", `/v1/account?token=${tenant.key}`, { key: tenant.key });
    await stack.request("POST", "/v1/team/api-keys", {
      key: tenant.key,
      body: { label: tenant.key },
    });
    const issued = (
      await stack.request("POST", "/v1/team/api-keys", { key: tenant.key, body: { label: "x" } })
    ).json();
    expect(logLines.length).toBeGreaterThan(0);
    const everything = logLines.join("\n");
    expect(everything).not.toContain(tenant.key);
    expect(everything).not.toContain(issued.secret);
    expect(everything).not.toContain(tenant.key.slice(8, 30));
  });
});
