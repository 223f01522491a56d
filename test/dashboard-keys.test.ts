// The dashboard's key page for every tier (decision 0380), through the gateway and the keys
// service on real Postgres, Redis and Kafka: an admin signed in to the dashboard issues, rotates
// in two steps and revokes keys and reports a compromise on any tier; the management API stays
// Team and Custom; and the dashboard's key operations answer no API key, whatever its tier.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardClient } from "./support/dashboard-client.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
const PASSWORD = "correct horse battery staple";
let ips = 0;
const nextIp = () => `192.0.2.${++ips}`;
const TIERS = ["starter", "operator", "team", "custom"] as const;
type Tier = (typeof TIERS)[number];

beforeAll(async () => {
  stack = await startEdgeStack();
});
afterAll(() => stack.close());

async function signedIn(tier: Tier) {
  const tenant = await stack.startTrial(tier, { password: PASSWORD });
  const client = dashboardClient(stack, nextIp());
  expect((await client.signIn(tenant.email, PASSWORD)).statusCode).toBe(201);
  return { tenant, client };
}

async function keyCount(tenantId: string): Promise<number> {
  const { rows } = await stack.harness.db
    .poolFor("keys")
    .query<{ n: number }>("SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1", [
      tenantId,
    ]);
  return rows[0]?.n ?? 0;
}

const works = async (key: string) => (await stack.request("GET", "/v1/me", { key })).statusCode;

describe("the dashboard's key page, for an admin of every tier", () => {
  it.each(TIERS)(
    "Authentication 6 and 8: an admin of the %s tier issues a key shown once, rotates it in two steps and revokes the old one, from a session",
    async (tier) => {
      const { tenant, client } = await signedIn(tier);
      const issued = await client.call("POST", "/v1/dashboard/api-keys", {
        body: { label: "CRM sync" },
      });
      expect(issued.statusCode).toBe(201);
      const key = issued.json();
      expect(key.secret).toMatch(/^th_live_/);
      expect(await works(key.secret)).toBe(200);

      const listed = await client.call("GET", "/v1/dashboard/api-keys");
      expect(listed.statusCode).toBe(200);
      expect(listed.body).not.toContain(key.secret);
      expect(listed.json().data.map((each: { id: string }) => each.id)).toEqual([
        tenant.keyId,
        key.id,
      ]);

      // Step one: the replacement; the old key keeps working while the new one is deployed.
      const rotated = await client.call("POST", `/v1/dashboard/api-keys/${key.id}:rotate`);
      expect(rotated.statusCode).toBe(201);
      const replacement = rotated.json();
      expect(replacement).toMatchObject({ label: "CRM sync", replaces_key_id: key.id });
      expect(await works(replacement.secret)).toBe(200);
      expect(await works(key.secret)).toBe(200);
      const during = (await client.call("GET", "/v1/dashboard/api-keys")).json().data;
      expect(during.find((each: { id: string }) => each.id === key.id)).toMatchObject({
        revoked: false,
        replaced_by_key_id: replacement.id,
      });
      // A second rotation of the same key while its replacement is active is refused.
      const again = await client.call("POST", `/v1/dashboard/api-keys/${key.id}:rotate`);
      expect(again.statusCode).toBe(409);

      // Step two: the old key is revoked, and refused at once.
      const revoked = await client.call("DELETE", `/v1/dashboard/api-keys/${key.id}`);
      expect(revoked.statusCode).toBe(204);
      expect(revoked.body).toBe("");
      expect(await works(key.secret)).toBe(401);
      expect(await works(replacement.secret)).toBe(200);
      const revokedAgain = await client.call("POST", `/v1/dashboard/api-keys/${key.id}:rotate`);
      expect(revokedAgain.statusCode).toBe(409);
    },
  );

  it.each(TIERS)(
    "Authentication 9: an admin of the %s tier reports a compromise from the dashboard: every key revoked for a compromise, one fresh key shown once",
    async (tier) => {
      const { tenant, client } = await signedIn(tier);
      const second = (
        await client.call("POST", "/v1/dashboard/api-keys", { body: { label: "second" } })
      ).json();
      const response = await client.call("POST", "/v1/dashboard/security/compromise");
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect([...body.revoked_key_ids].sort()).toEqual([tenant.keyId, second.id].sort());
      expect(body.webhook_secrets_rotation).toBe("requested");
      expect(await works(tenant.key)).toBe(401);
      expect(await works(second.secret)).toBe(401);
      expect(await works(body.api_key.secret)).toBe(200);
      // The reason the dispatcher rotates the tenant's webhook secrets on.
      const { rows } = await stack.harness.db
        .poolFor("keys")
        .query<{ reason: string }>(
          "SELECT revoke_reason AS reason FROM api_keys WHERE id = ANY($1::text[])",
          [[tenant.keyId, second.id]],
        );
      expect(rows.map((row) => row.reason)).toEqual(["compromise", "compromise"]);
    },
  );
});

describe("the management API and the dashboard's key operations stay apart", () => {
  it.each(["starter", "operator"] as const)(
    "E13: the management API stays Team and Custom: an admin of the %s tier gets tier_required with its key and with its session",
    async (tier) => {
      const { tenant, client } = await signedIn(tier);
      const before = await keyCount(tenant.tenantId);
      for (const refused of [
        await stack.request("POST", "/v1/team/api-keys", {
          key: tenant.key,
          body: { label: "x" },
        }),
        await client.call("POST", "/v1/team/api-keys", { body: { label: "x" } }),
        await client.call("GET", "/v1/team/api-keys"),
        await client.call("POST", "/v1/team/security/compromise"),
      ]) {
        expect(refused.statusCode).toBe(403);
        expect(refused.json()).toMatchObject({ error: "tier_required" });
        expect(refused.json().upgrade_url).toMatch(/feature=management/);
      }
      expect(await keyCount(tenant.tenantId)).toBe(before);
      expect(await works(tenant.key)).toBe(200);
    },
  );

  it.each(TIERS)(
    "an API key of a tenant on the %s tier reaches none of the dashboard's key operations, with or without the session's cookie beside it",
    async (tier) => {
      const { tenant, client } = await signedIn(tier);
      const before = await keyCount(tenant.tenantId);
      const attempts = [
        stack.request("POST", "/v1/dashboard/api-keys", { key: tenant.key, body: { label: "x" } }),
        stack.request("GET", "/v1/dashboard/api-keys", { key: tenant.key }),
        stack.request("POST", `/v1/dashboard/api-keys/${tenant.keyId}:rotate`, {
          key: tenant.key,
        }),
        stack.request("DELETE", `/v1/dashboard/api-keys/${tenant.keyId}`, { key: tenant.key }),
        stack.request("POST", "/v1/dashboard/security/compromise", { key: tenant.key }),
        // A key sent beside the session's cookies is judged as the key.
        client.call("POST", "/v1/dashboard/api-keys", {
          body: { label: "x" },
          headers: { authorization: `Bearer ${tenant.key}` },
        }),
      ];
      for (const refused of await Promise.all(attempts)) {
        expect(refused.statusCode).toBe(403);
        expect(refused.json().error).toBe("forbidden");
      }
      expect(await keyCount(tenant.tenantId)).toBe(before);
      expect(await works(tenant.key)).toBe(200);
    },
  );

  it("refuses a member who is not an admin, a call without the CSRF token, and another tenant's key", async () => {
    const { tenant, client } = await signedIn("team");
    const other = await stack.startTrial("starter");
    // Not found, not revoked: the key is another tenant's.
    for (const path of [
      `/v1/dashboard/api-keys/${other.keyId}`,
      `/v1/dashboard/api-keys/${other.keyId}:rotate`,
    ]) {
      const response = await client.call(path.endsWith(":rotate") ? "POST" : "DELETE", path);
      expect(response.statusCode, path).toBe(404);
    }
    expect(await works(other.key)).toBe(200);

    const before = await keyCount(tenant.tenantId);
    const forged = await client.call("POST", "/v1/dashboard/api-keys", {
      body: { label: "x" },
      csrf: false,
    });
    expect(forged.statusCode).toBe(403);

    const added = await client.call("POST", "/v1/team/members", {
      body: { email: "member@acme.test", role: "member" },
    });
    expect(added.statusCode).toBe(201);
    const token = (
      await client.call("POST", `/v1/team/members/${added.json().id}/password-token`)
    ).json().token;
    expect(
      (
        await stack.request("POST", "/v1/public/password", {
          ip: nextIp(),
          body: { token, password: PASSWORD },
        })
      ).statusCode,
    ).toBe(204);
    const member = dashboardClient(stack, nextIp());
    expect((await member.signIn("member@acme.test", PASSWORD)).statusCode).toBe(201);
    for (const refused of [
      await member.call("GET", "/v1/dashboard/api-keys"),
      await member.call("POST", "/v1/dashboard/api-keys", { body: { label: "x" } }),
      await member.call("DELETE", `/v1/dashboard/api-keys/${tenant.keyId}`),
      await member.call("POST", "/v1/dashboard/security/compromise"),
    ]) {
      expect(refused.statusCode).toBe(403);
      expect(refused.json().error).toBe("forbidden");
    }
    expect(await keyCount(tenant.tenantId)).toBe(before);
    expect(await works(tenant.key)).toBe(200);
  });
});
