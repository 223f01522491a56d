// Dashboard sign-in end to end: gateway, keys, parcels and quota-ledger on real Postgres, Redis
// and Kafka. A session's calls are the tenant's calls: the same tier gates, rolling minute,
// lead-view metering and six headers as its API keys; state changes need the CSRF token.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardClient } from "./support/dashboard-client.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import { SIX_HEADERS } from "./support/limit-headers.ts";

let stack: EdgeStack;
let folios: string[];
const PASSWORD = "correct horse battery staple";
let ips = 0;
const nextIp = () => `192.0.2.${++ips}`;

beforeAll(async () => {
  stack = await startEdgeStack();
  folios = await stack.ingestSample();
});
afterAll(() => stack.close());

async function signedIn(tier: "starter" | "operator" | "team" | "custom" = "team") {
  const tenant = await stack.startTrial(tier, { password: PASSWORD });
  const client = dashboardClient(stack, nextIp());
  const response = await client.signIn(tenant.email, PASSWORD);
  expect(response.statusCode).toBe(201);
  return { tenant, client, session: response.json() };
}

describe("sign-in", () => {
  it("names the accounts an email and password open when they open several, and signs in to the one chosen", async () => {
    const email = `shared-${Date.now()}@acme.test`;
    const companies = ["Shared Realty", "Shared Holdings"];
    const tenants: string[] = [];
    for (const company of companies) {
      const trial = await stack.request("POST", "/v1/public/trials", {
        ip: nextIp(),
        body: {
          tier: "team",
          company,
          admin_email: email,
          payment_method: "pm_card_visa",
          admin_password: PASSWORD,
        },
      });
      expect(trial.statusCode).toBe(201);
      tenants.push(trial.json().tenant.id);
    }
    const ambiguous = await dashboardClient(stack, nextIp()).signIn(email, PASSWORD);
    expect(ambiguous.statusCode).toBe(409);
    expect(ambiguous.json().accounts).toEqual(
      companies.map((company, index) => ({ tenant_id: tenants[index], company })),
    );
    const chosen = await stack.request("POST", "/v1/dashboard/session", {
      ip: nextIp(),
      body: { email, password: PASSWORD, tenant_id: tenants[1] },
    });
    expect(chosen.statusCode).toBe(201);
    expect(JSON.stringify(chosen.json())).toContain(tenants[1] as string);
    // A wrong password names nothing.
    const wrong = await dashboardClient(stack, nextIp()).signIn(email, "not the password at all");
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().accounts).toBeUndefined();
  });

  it("sets httpOnly, Secure, SameSite=Strict session and refresh cookies and a readable CSRF cookie", async () => {
    const { tenant, client, session } = await signedIn();
    expect(session).toMatchObject({
      member: { id: tenant.memberId, email: tenant.email, role: "admin" },
      tenant: { id: tenant.tenantId, tier: "team" },
    });
    expect(session.csrf_token).toBe(client.csrf);
    const lines = client.setCookies.flat();
    const line = (name: string) => lines.find((each) => each.startsWith(`${name}=`)) ?? "";
    for (const name of ["th_session", "th_refresh"]) {
      expect(line(name)).toMatch(/HttpOnly/);
      expect(line(name)).toMatch(/Secure/);
      expect(line(name)).toMatch(/SameSite=Strict/);
    }
    expect(line("th_refresh")).toMatch(/Path=\/v1\/dashboard\/session/);
    expect(line("th_csrf")).not.toMatch(/HttpOnly/);
    expect(line("th_csrf")).toMatch(/Secure/);
    expect(line("th_csrf")).toMatch(/SameSite=Strict/);
    const me = await client.call("GET", "/v1/dashboard/session");
    expect(me.statusCode).toBe(200);
    expect(me.json().member.email).toBe(tenant.email);
  });

  it("refuses a wrong password or unknown email with 401 and counts it in the client's failed-authentication window", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const client = dashboardClient(stack, nextIp());
    const wrong = await client.signIn(tenant.email, "not the password at all");
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ error: "unauthorized" });
    expect(wrong.headers["x-ratelimit-limit"]).toBe("60");
    const unknown = await client.signIn("nobody@nowhere.test", PASSWORD);
    expect(unknown.statusCode).toBe(401);
    expect(Number(unknown.headers["x-ratelimit-remaining"])).toBe(58);
    expect(client.jar.size).toBe(0);
  });

  it("lets the trial's first admin set a password with the one-time token from the trial", async () => {
    const tenant = await stack.startTrial("operator");
    expect(tenant.passwordSetupToken).toMatch(/^thpw_/);
    const set = await stack.request("POST", "/v1/public/password", {
      ip: nextIp(),
      body: { token: tenant.passwordSetupToken, password: "my own passphrase" },
    });
    expect(set.statusCode).toBe(204);
    const client = dashboardClient(stack, nextIp());
    expect((await client.signIn(tenant.email, "my own passphrase")).statusCode).toBe(201);
  });
});

describe("a session's calls are the tenant's calls", () => {
  it("carry the six limit headers and share the tenant's rolling minute with its keys", async () => {
    const { tenant, client } = await signedIn("custom");
    await stack.setCustomLimits(tenant.tenantId, { rate_per_minute: 6 });
    const bySession = await client.call("GET", "/v1/account");
    expect(bySession.statusCode).toBe(200);
    for (const name of SIX_HEADERS) {
      expect(bySession.headers[name], name).toBeDefined();
    }
    const first = Number(bySession.headers["x-ratelimit-remaining"]);
    const byKey = await stack.request("GET", "/v1/account", { key: tenant.key });
    expect(Number(byKey.headers["x-ratelimit-remaining"])).toBe(first - 1);
    const again = await client.call("GET", "/v1/account");
    expect(Number(again.headers["x-ratelimit-remaining"])).toBe(first - 2);
    let last = again;
    for (let i = 0; i < 6 && last.statusCode !== 429; i++) {
      last = await client.call("GET", "/v1/account");
    }
    expect(last.statusCode).toBe(429);
    expect((await stack.request("GET", "/v1/account", { key: tenant.key })).statusCode).toBe(429);
  });

  it("meet the same tier gate and upgrade URL as the tenant's keys", async () => {
    const { tenant, client } = await signedIn("starter");
    const bySession = await client.call("GET", "/v1/team/api-keys");
    const byKey = await stack.request("GET", "/v1/team/api-keys", { key: tenant.key });
    expect(bySession.statusCode).toBe(403);
    expect(bySession.json().error).toBe("tier_required");
    expect(bySession.json().upgrade_url).toBe(byKey.json().upgrade_url);
  });

  it("meter lead-views on the web surface: one per lead expanded, none for a second view the same day", async () => {
    const { tenant, client } = await signedIn("team");
    const before = Number(
      (await client.call("GET", "/v1/account")).headers["x-quota-lead-views-remaining"],
    );
    const first = await client.call("GET", `/v1/leads/${folios[0]}`);
    expect(first.statusCode).toBe(200);
    expect(Number(first.headers["x-quota-lead-views-remaining"])).toBe(before - 1);
    const second = await client.call("GET", `/v1/leads/${folios[0]}`);
    expect(Number(second.headers["x-quota-lead-views-remaining"])).toBe(before - 1);
    const byKey = await stack.request("GET", `/v1/leads/${folios[0]}`, { key: tenant.key });
    expect(Number(byKey.headers["x-quota-lead-views-remaining"])).toBe(before - 1);
    const ledger = stack.harness.db.poolFor("quota_ledger");
    let rows: { surface: string; key_id: string | null; member_id: string }[] = [];
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      rows = (
        await ledger.query(
          "SELECT surface, key_id, member_id FROM lead_views WHERE tenant_id = $1",
          [tenant.tenantId],
        )
      ).rows;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(rows).toEqual([{ surface: "web", key_id: null, member_id: tenant.memberId }]);
  });

  it("need the CSRF token to change state, and see a key's secret only in the answer that issues it", async () => {
    const { client } = await signedIn("team");
    const missing = await client.call("POST", "/v1/team/api-keys", {
      body: { label: "no csrf" },
      csrf: false,
    });
    expect(missing.statusCode).toBe(403);
    expect(missing.json().detail).toMatch(/CSRF/);
    const wrong = await client.call("POST", "/v1/team/api-keys", {
      body: { label: "wrong csrf" },
      headers: { "x-csrf-token": "forged" },
    });
    expect(wrong.statusCode).toBe(403);
    const issued = await client.call("POST", "/v1/team/api-keys", { body: { label: "from web" } });
    expect(issued.statusCode).toBe(201);
    expect(issued.json().secret).toMatch(/^th_live_/);
    const listed = await client.call("GET", "/v1/team/api-keys");
    expect(listed.body).not.toContain(issued.json().secret);
    expect(listed.body).not.toContain("secret");
    const revoked = await client.call("DELETE", `/v1/team/api-keys/${issued.json().id}`);
    expect(revoked.statusCode).toBe(204);
    const refused = await stack.request("GET", "/v1/me", { key: issued.json().secret });
    expect(refused.statusCode).toBe(401);
  });

  it("are not accepted on /mcp, and a Bearer key takes precedence over a session cookie", async () => {
    const { client } = await signedIn("team");
    const other = await stack.startTrial("operator");
    const mcp = await client.call("POST", "/mcp", {
      body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
      headers: { accept: "application/json, text/event-stream" },
    });
    expect(mcp.statusCode).toBe(401);
    const me = await client.call("GET", "/v1/me", {
      headers: { authorization: `Bearer ${other.key}` },
    });
    expect(me.json().tenant_id).toBe(other.tenantId);
  });
});

describe("refresh and sign-out", () => {
  it("refresh issues a new access cookie with the CSRF token, and the session ends at once when the member is removed", async () => {
    const { tenant, client } = await signedIn("team");
    const noCsrf = await client.call("POST", "/v1/dashboard/session/refresh", { csrf: false });
    expect(noCsrf.statusCode).toBe(403);
    const oldAccess = client.jar.get("th_session")?.value;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const refreshed = await client.call("POST", "/v1/dashboard/session/refresh");
    expect(refreshed.statusCode).toBe(200);
    expect(client.jar.get("th_session")?.value).not.toBe(oldAccess);
    expect(refreshed.json().csrf_token).toBe(client.csrf);

    const added = await client.call("POST", "/v1/team/members", {
      body: { email: "second@acme.test", role: "admin" },
    });
    expect(added.statusCode).toBe(201);
    const link = await client.call("POST", `/v1/team/members/${added.json().id}/password-token`);
    expect(link.json().purpose).toBe("invite");
    await stack.request("POST", "/v1/public/password", {
      ip: nextIp(),
      body: { token: link.json().token, password: "second admin passphrase" },
    });
    const second = dashboardClient(stack, nextIp());
    expect((await second.signIn("second@acme.test", "second admin passphrase")).statusCode).toBe(
      201,
    );
    expect((await second.call("GET", "/v1/watchlists")).statusCode).toBe(200);
    const removed = await client.call("DELETE", `/v1/team/members/${added.json().id}`);
    expect(removed.statusCode).toBe(204);
    // The access token the removed admin still holds is refused at once, reads and writes alike.
    expect((await second.call("GET", "/v1/watchlists")).statusCode).toBe(401);
    const write = await second.call("POST", "/v1/watchlists", {
      body: { name: "after removal", recipe: { filters: { counties: [23] } } },
    });
    expect(write.statusCode).toBe(401);
    const afterRemoval = await second.call("POST", "/v1/dashboard/session/refresh");
    expect(afterRemoval.statusCode).toBe(401);
    // The admin who removed them is still signed in.
    expect((await client.call("GET", "/v1/watchlists")).statusCode).toBe(200);
    expect(tenant.tenantId).toBeTruthy();
  });

  it("Authentication 3: keys belong to the tenant, not to a user: removing a member keeps the keys they issued, unless revoking them is chosen", async () => {
    const { client } = await signedIn("team");
    async function memberWithKey(email: string) {
      const added = await client.call("POST", "/v1/team/members", {
        body: { email, role: "admin" },
      });
      const link = await client.call("POST", `/v1/team/members/${added.json().id}/password-token`);
      await stack.request("POST", "/v1/public/password", {
        ip: nextIp(),
        body: { token: link.json().token, password: "member passphrase here" },
      });
      const member = dashboardClient(stack, nextIp());
      expect((await member.signIn(email, "member passphrase here")).statusCode).toBe(201);
      const issued = await member.call("POST", "/v1/team/api-keys", { body: { label: email } });
      expect(issued.statusCode).toBe(201);
      return { memberId: added.json().id as string, key: issued.json() };
    }
    const kept = await memberWithKey(`kept-${Date.now()}@acme.test`);
    const removed = await client.call("DELETE", `/v1/team/members/${kept.memberId}`);
    expect(removed.statusCode).toBe(204);
    // The key still authenticates, and the listing shows its issuer as a removed member.
    const stillWorks = await stack.request("GET", "/v1/account", {
      key: kept.key.secret,
      ip: nextIp(),
    });
    expect(stillWorks.statusCode).toBe(200);
    const listed = (await client.call("GET", "/v1/team/api-keys")).json().data;
    expect(listed.find((key: { id: string }) => key.id === kept.key.id)).toMatchObject({
      member_id: kept.memberId,
      member_removed: true,
      revoked: false,
    });

    // Revoking them is a separate, explicit choice in the removal request.
    const revoked = await memberWithKey(`revoked-${Date.now()}@acme.test`);
    const removedWithKeys = await client.call(
      "DELETE",
      `/v1/team/members/${revoked.memberId}?revoke_keys=true`,
    );
    expect(removedWithKeys.statusCode).toBe(204);
    const refused = await stack.request("GET", "/v1/account", {
      key: revoked.key.secret,
      ip: nextIp(),
    });
    expect(refused.statusCode).toBe(401);
    const after = (await client.call("GET", "/v1/team/api-keys")).json().data;
    expect(after.find((key: { id: string }) => key.id === revoked.key.id)).toMatchObject({
      member_removed: true,
      revoked: true,
    });
  });

  it("sign-out clears the cookies and refuses the session's tokens everywhere at once", async () => {
    const { client } = await signedIn("team");
    const access = client.jar.get("th_session")?.value as string;
    const out = await client.call("DELETE", "/v1/dashboard/session");
    expect(out.statusCode).toBe(204);
    // A browser drops a cookie only when told it has expired, not for an empty value.
    const cleared = client.setCookies.at(-1) ?? [];
    for (const name of ["th_session", "th_refresh", "th_csrf"]) {
      expect(cleared.find((line) => line.startsWith(`${name}=;`))).toMatch(/Max-Age=0/);
    }
    expect(client.jar.has("th_session")).toBe(false);
    const replayed = await stack.request("GET", "/v1/account", {
      ip: nextIp(),
      headers: { cookie: `th_session=${access}` },
    });
    expect(replayed.statusCode).toBe(401);
    expect(replayed.json().detail).toMatch(/signed out/);
    const forged = await stack.request("GET", "/v1/account", {
      ip: nextIp(),
      headers: { cookie: `th_session=${access.slice(0, -2)}xx` },
    });
    expect(forged.statusCode).toBe(401);
  });
});
