import { hashApiKey, isWellFormedApiKey } from "@th/api-keys";
import { unservedOperations } from "@th/api-schemas";
import { on } from "@th/bus";
import { pepperOf } from "@th/config";
import { contracts, type KeyRevoked, type TenantChanged } from "@th/contracts";
import { INTERNAL_HEADERS } from "@th/service-kit";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { LocalPaymentProvider } from "../domain/payment-provider.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
const payments = new LocalPaymentProvider();
let clock = new Date("2026-11-01T10:00:00Z");
const DAY = 86_400_000;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.tenantChanged, contracts.keyIssued, contracts.keyRevoked],
  });
  app = await buildApp(harness, { payments, now: () => clock });
});
afterAll(async () => {
  await app.http?.close();
  await app.stop();
  await harness.close();
});

/** A call that names no tenant, member or key (signed like every call). */
const token: Record<string, string> = {};

function as(caller: { tenantId: string; memberId: string; keyId?: string }) {
  return {
    ...token,
    [INTERNAL_HEADERS.tenant]: caller.tenantId,
    [INTERNAL_HEADERS.member]: caller.memberId,
    [INTERNAL_HEADERS.key]: caller.keyId ?? "key_test",
  };
}

async function call(
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  headers: Record<string, string>,
  payload?: object,
) {
  if (!app.http) {
    throw new Error("no http app");
  }
  return app.http.inject(signedInject(app.http, "keys", { method, url, headers, body: payload }));
}

async function startTrial(tier: string, paymentMethod = "pm_card_visa") {
  return call("POST", "/internal/v1/trials", token, {
    tier,
    company: `Acme ${tier}`,
    admin_email: `owner-${Math.random().toString(36).slice(2)}@acme.test`,
    payment_method: paymentMethod,
  });
}

async function count(table: string) {
  const { rows } = await harness.pool.query(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0].n as number;
}

describe("trial start", () => {
  it("creates the tenant, its first admin and its first key, returning the secret once", async () => {
    const response = await startTrial("team");
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body.tenant).toMatchObject({
      tier: "team",
      status: "trialing",
      seats: 5,
      lead_views_per_month: 5000,
    });
    expect(body.member.role).toBe("admin");
    expect(isWellFormedApiKey(body.api_key.secret)).toBe(true);
    expect(body.api_key).toMatchObject({
      member_id: body.member.id,
      revoked: false,
      last4: body.api_key.secret.slice(-4),
    });
    const { rows } = await harness.pool.query(
      "SELECT key_hash, last4 FROM api_keys WHERE id = $1",
      [body.api_key.id],
    );
    expect(rows[0].key_hash).toBe(hashApiKey(body.api_key.secret, pepperOf(harness.config)));
    expect(JSON.stringify(rows[0])).not.toContain(body.api_key.secret.slice(8, -4));
    const listed = await call(
      "GET",
      "/internal/v1/api-keys",
      as({ tenantId: body.tenant.id, memberId: body.member.id }),
    );
    expect(listed.body).not.toContain(body.api_key.secret);
  });

  it("fixes the billing anniversary at activation and the trial end 14 days later", async () => {
    const body = (await startTrial("operator")).json();
    expect(body.tenant.billing_anniversary).toBe(clock.toISOString().slice(0, 10));
    expect(new Date(body.tenant.trial_ends_at).getTime() - clock.getTime()).toBe(14 * DAY);
    expect(payments.charges.filter((charge) => charge.customerRef.includes("visa"))).toHaveLength(
      0,
    );
  });

  it("creates nothing when the card is declined", async () => {
    const before = await Promise.all(["tenants", "members", "api_keys", "outbox"].map(count));
    const response = await startTrial("team", "pm_card_declined");
    expect(response.statusCode).toBe(402);
    expect(response.json()).toMatchObject({ error: "payment_declined" });
    const after = await Promise.all(["tenants", "members", "api_keys", "outbox"].map(count));
    expect(after).toEqual(before);
  });

  it("rejects an unknown tier or a missing card with 400 naming the field", async () => {
    const response = await call("POST", "/internal/v1/trials", token, {
      tier: "gold",
      company: "x",
      admin_email: "a@b.co",
    });
    expect(response.statusCode).toBe(400);
    const paths = response.json().fields.map((field: { path: string }) => field.path);
    expect(paths).toEqual(expect.arrayContaining(["body.tier", "body.payment_method"]));
  });
});

describe("trial conversion with the built-in processor", () => {
  it("charges nothing before day 14, then activates a paid trial and makes one whose charge fails past due", async () => {
    const paid = (await startTrial("team")).json();
    const failing = (await startTrial("team", "pm_card_charge_fails")).json();
    const started = clock;
    clock = new Date(started.getTime() + 14 * DAY - 1000);
    const early = await app.accounts.convertEndedTrials();
    expect(early.activated).not.toContain(paid.tenant.id);
    clock = new Date(started.getTime() + 14 * DAY);
    const due = await app.accounts.convertEndedTrials();
    expect(due.activated).toContain(paid.tenant.id);
    expect(due.pastDue).toContain(failing.tenant.id);
    const { rows: standing } = await harness.pool.query(
      "SELECT status, standing FROM tenants WHERE id = $1",
      [failing.tenant.id],
    );
    expect(standing).toEqual([{ status: "active", standing: "past_due" }]);
    const again = await app.accounts.convertEndedTrials();
    expect(again.activated).not.toContain(paid.tenant.id);
    const { rows } = await harness.pool.query("SELECT status FROM charges WHERE tenant_id = $1", [
      paid.tenant.id,
    ]);
    expect(rows).toEqual([{ status: "succeeded" }]);
    clock = started;
  });

  it("S6: a trial cancelled before day 14 is never charged: not at day 14, nor any time after", async () => {
    const trial = (await startTrial("operator")).json();
    const started = clock;
    try {
      clock = new Date(started.getTime() + 3 * DAY);
      const admin = as({ tenantId: trial.tenant.id, memberId: trial.member.id });
      const cancelled = await call("POST", "/internal/v1/tenant/cancel", admin);
      expect(cancelled.statusCode).toBe(200);
      expect(cancelled.json().status).toBe("cancelled");
      for (const day of [14, 15, 45, 400]) {
        clock = new Date(started.getTime() + day * DAY);
        const converted = await app.accounts.convertEndedTrials();
        expect(converted.activated).not.toContain(trial.tenant.id);
        expect(converted.pastDue).not.toContain(trial.tenant.id);
      }
      const { rows } = await harness.pool.query("SELECT * FROM charges WHERE tenant_id = $1", [
        trial.tenant.id,
      ]);
      expect(rows).toEqual([]);
      const { rows: tenant } = await harness.pool.query(
        "SELECT status, payment_customer_ref FROM tenants WHERE id = $1",
        [trial.tenant.id],
      );
      expect(tenant[0]?.status).toBe("cancelled");
      expect(
        payments.charges.filter((charge) => charge.customerRef === tenant[0]?.payment_customer_ref),
      ).toEqual([]);
    } finally {
      clock = started;
    }
  });
});

describe("API keys", () => {
  it("are issued to admins with 201 and listed with their age and rotation reminder, never the secret", async () => {
    const trial = (await startTrial("team")).json();
    const admin = as({ tenantId: trial.tenant.id, memberId: trial.member.id });
    const issued = await call("POST", "/internal/v1/api-keys", admin, { label: "ci" });
    expect(issued.statusCode).toBe(201);
    expect(Object.keys(issued.json()).sort()).toEqual(
      [
        "age_days",
        "created_at",
        "id",
        "label",
        "last4",
        "member_id",
        "member_removed",
        "replaced_by_key_id",
        "replaces_key_id",
        "revoked",
        "rotation_due",
        "secret",
      ].sort(),
    );
    const issuedAt = clock;
    clock = new Date(issuedAt.getTime() + 91 * DAY);
    const listed = (await call("GET", "/internal/v1/api-keys", admin)).json().data;
    clock = issuedAt;
    expect(listed).toHaveLength(2);
    expect(listed.find((key: { label: string }) => key.label === "ci")).toMatchObject({
      label: "ci",
      age_days: 91,
      rotation_due: true,
      revoked: false,
    });
    expect(listed.every((key: Record<string, unknown>) => !("secret" in key))).toBe(true);
  });

  it("cannot be issued or revoked by a member who is not an admin", async () => {
    const trial = (await startTrial("team")).json();
    const admin = as({ tenantId: trial.tenant.id, memberId: trial.member.id });
    const member = (
      await call("POST", "/internal/v1/members", admin, { email: "analyst@acme.test" })
    ).json();
    const asMember = as({ tenantId: trial.tenant.id, memberId: member.id });
    expect(
      (await call("POST", "/internal/v1/api-keys", asMember, { label: "mine" })).statusCode,
    ).toBe(403);
    const revoke = await call("DELETE", `/internal/v1/api-keys/${trial.api_key.id}`, asMember);
    expect(revoke.statusCode).toBe(403);
    expect(revoke.json().error).toBe("forbidden");
  });

  it("of another tenant are not found", async () => {
    const mine = (await startTrial("team")).json();
    const theirs = (await startTrial("team")).json();
    const response = await call(
      "DELETE",
      `/internal/v1/api-keys/${theirs.api_key.id}`,
      as({ tenantId: mine.tenant.id, memberId: mine.member.id }),
    );
    expect(response.statusCode).toBe(404);
    const lookup = await call(
      "GET",
      `/internal/v1/keys/by-hash/${hashApiKey(theirs.api_key.secret, pepperOf(harness.config))}`,
      token,
    );
    expect(lookup.json().revoked).toBe(false);
  });

  it("revoke once and stay revoked, returning the hash the edge must refuse", async () => {
    const trial = (await startTrial("team")).json();
    const admin = as({ tenantId: trial.tenant.id, memberId: trial.member.id });
    const hash = hashApiKey(trial.api_key.secret, pepperOf(harness.config));
    const first = await call("DELETE", `/internal/v1/api-keys/${trial.api_key.id}`, admin);
    expect(first.json()).toEqual({ key_hashes: [hash] });
    const second = await call("DELETE", `/internal/v1/api-keys/${trial.api_key.id}`, admin);
    expect(second.statusCode).toBe(200);
    expect((await call("GET", `/internal/v1/keys/by-hash/${hash}`, token)).json().revoked).toBe(
      true,
    );
  });

  it("are all revoked on suspected compromise, with a fresh key for the caller and events that rotate webhook secrets", async () => {
    const revoked: KeyRevoked[] = [];
    const consumer = await harness.bus.consume({
      group: "keys-test-revoked",
      subscriptions: [
        on(contracts.keyRevoked, async (message) => void revoked.push(message.value)),
      ],
    });
    const trial = (await startTrial("team")).json();
    const admin = as({ tenantId: trial.tenant.id, memberId: trial.member.id });
    await call("POST", "/internal/v1/api-keys", admin, { label: "second" });
    const response = await call("POST", "/internal/v1/api-keys/revoke-all", admin);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.revoked_key_ids).toHaveLength(2);
    expect(isWellFormedApiKey(body.api_key.secret)).toBe(true);
    const listed = (await call("GET", "/internal/v1/api-keys", admin)).json().data;
    expect(
      listed
        .filter((key: { revoked: boolean }) => !key.revoked)
        .map((key: { id: string }) => key.id),
    ).toEqual([body.api_key.id]);
    await vi.waitFor(
      () =>
        expect(
          revoked.filter(
            (event) => event.tenant_id === trial.tenant.id && event.reason === "compromise",
          ),
        ).toHaveLength(2),
      { timeout: 15_000 },
    );
    await consumer.stop();
  });
});

describe("members and seats", () => {
  it("cap members at the tier's seats: Starter 1, Team 5", async () => {
    const starter = (await startTrial("starter")).json();
    const starterAdmin = as({ tenantId: starter.tenant.id, memberId: starter.member.id });
    const refused = await call("POST", "/internal/v1/members", starterAdmin, {
      email: "second@acme.test",
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toBe("seat_limit_reached");
    const team = (await startTrial("team")).json();
    const teamAdmin = as({ tenantId: team.tenant.id, memberId: team.member.id });
    for (let i = 0; i < 4; i++) {
      expect(
        (await call("POST", "/internal/v1/members", teamAdmin, { email: `m${i}@acme.test` }))
          .statusCode,
      ).toBe(201);
    }
    expect(
      (await call("POST", "/internal/v1/members", teamAdmin, { email: "m5@acme.test" })).statusCode,
    ).toBe(409);
  });

  it("removing a member frees the seat and keeps the keys they issued (keys belong to the tenant) unless revoke_keys=true; the last admin stays", async () => {
    const team = (await startTrial("team")).json();
    const admin = as({ tenantId: team.tenant.id, memberId: team.member.id });
    const member = (
      await call("POST", "/internal/v1/members", admin, { email: "x@acme.test", role: "admin" })
    ).json();
    const memberKey = (
      await call(
        "POST",
        "/internal/v1/api-keys",
        as({ tenantId: team.tenant.id, memberId: member.id }),
        { label: "x" },
      )
    ).json();
    const removed = await call("DELETE", `/internal/v1/members/${member.id}`, admin);
    expect(removed.json().key_hashes).toEqual([]);
    const listed = (await call("GET", "/internal/v1/api-keys", admin)).json().data;
    expect(listed.find((key: { id: string }) => key.id === memberKey.id)).toMatchObject({
      member_removed: true,
      revoked: false,
    });
    const second = (
      await call("POST", "/internal/v1/members", admin, { email: "y@acme.test", role: "admin" })
    ).json();
    const secondKey = (
      await call(
        "POST",
        "/internal/v1/api-keys",
        as({ tenantId: team.tenant.id, memberId: second.id }),
        { label: "y" },
      )
    ).json();
    const revoking = await call(
      "DELETE",
      `/internal/v1/members/${second.id}?revoke_keys=true`,
      admin,
    );
    expect(revoking.json().key_hashes).toEqual([
      hashApiKey(secondKey.secret, pepperOf(harness.config)),
    ]);
    const last = await call("DELETE", `/internal/v1/members/${team.member.id}`, admin);
    expect(last.statusCode).toBe(409);
  });
});

describe("tenant events", () => {
  it("publish tenant.changed with the new caps when the tier changes", async () => {
    const changes: TenantChanged[] = [];
    const consumer = await harness.bus.consume({
      group: "keys-test-tenant",
      subscriptions: [
        on(contracts.tenantChanged, async (message) => void changes.push(message.value)),
      ],
    });
    const trial = (await startTrial("starter")).json();
    const admin = as({ tenantId: trial.tenant.id, memberId: trial.member.id });
    const upgraded = await call("POST", "/internal/v1/tenant/tier", admin, { tier: "operator" });
    expect(upgraded.json()).toMatchObject({
      tier: "operator",
      lead_views_per_month: 2000,
      rate_per_minute: 600,
    });
    await vi.waitFor(
      () => {
        const mine = changes.filter((event) => event.tenant_id === trial.tenant.id);
        expect(mine.map((event) => [event.revision, event.tier])).toEqual([
          [1, "starter"],
          [2, "operator"],
        ]);
      },
      { timeout: 15_000 },
    );
    await consumer.stop();
  });
});

describe("internal API", () => {
  it("refuses calls that no accepted caller signed", async () => {
    const http = app.http;
    if (!http) {
      throw new Error("no http app");
    }
    const unsigned = await http.inject({ method: "GET", url: "/internal/v1/api-keys" });
    expect(unsigned.statusCode).toBe(401);
    expect(unsigned.json().error).toBe("unauthorized");
    const forged = await http.inject(
      signedInject(http, "keys", {
        method: "GET",
        url: "/internal/v1/api-keys",
        root: "a-signing-root-this-service-never-accepted",
      }),
    );
    expect(forged.statusCode).toBe(401);
  });
});

describe("tier changes", () => {
  it("refuse a tier with fewer seats than the tenant has members, and change nothing", async () => {
    const team = (await startTrial("team")).json();
    const admin = as({ tenantId: team.tenant.id, memberId: team.member.id });
    for (let i = 0; i < 3; i++) {
      await call("POST", "/internal/v1/members", admin, { email: `seat${i}@acme.test` });
    }
    const refused = await call("POST", "/internal/v1/tenant/tier", admin, { tier: "operator" });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({
      error: "seat_limit_reached",
      detail: expect.stringContaining("remove 3 before changing tier"),
    });
    const tenant = (await call("GET", "/internal/v1/tenant", admin)).json();
    expect(tenant).toMatchObject({ tier: "team", seats: 5 });
  });
});

describe("Custom contracts", () => {
  it("let operators set a Custom tenant's negotiated caps, announced on tenant.changed", async () => {
    const trial = (await startTrial("custom")).json();
    const response = await call(
      "PUT",
      `/internal/v1/operator/tenants/${trial.tenant.id}/limits`,
      token,
      {
        lead_views_per_month: 25_000,
        seats: 12,
      },
    );
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      lead_views_per_month: 25_000,
      seats: 12,
      rate_per_minute: 1_200,
    });
    const team = (await startTrial("team")).json();
    const refused = await call(
      "PUT",
      `/internal/v1/operator/tenants/${team.tenant.id}/limits`,
      token,
      { seats: 9 },
    );
    expect(refused.statusCode).toBe(409);
  });

  it("keep their negotiated caps when the tenant asks for Custom again", async () => {
    const trial = (await startTrial("custom")).json();
    await call("PUT", `/internal/v1/operator/tenants/${trial.tenant.id}/limits`, token, {
      lead_views_per_month: 50_000,
      rate_per_minute: 3_000,
      seats: 12,
    });
    const admin = as({ tenantId: trial.tenant.id, memberId: trial.member.id });
    const again = await call("POST", "/internal/v1/tenant/tier", admin, { tier: "custom" });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({
      tier: "custom",
      lead_views_per_month: 50_000,
      rate_per_minute: 3_000,
      seats: 12,
    });
  });
});

describe("the operation table", () => {
  it("has a route at the internal path of every public operation the keys service owns", () => {
    const { owned, unserved } = unservedOperations("keys", (route) =>
      Boolean(app.http?.hasRoute(route)),
    );
    expect(owned).toBeGreaterThan(0);
    expect(unserved).toEqual([]);
  });
});

describe("contact requests", () => {
  it("are listed to operators newest first, with what the form sent", async () => {
    const older = await call("POST", "/internal/v1/contact", token, {
      name: "Ana Ruiz",
      email: "ana@brokerage.test",
      company: "Ruiz Realty",
      message: "We would like a Custom quote for three counties.",
    });
    expect(older.statusCode).toBe(202);
    clock = new Date(clock.getTime() + 60_000);
    const newer = await call("POST", "/internal/v1/contact", token, {
      name: "Ben Ode",
      email: "ben@flip.test",
      message: "Do you cover Monroe County?",
    });
    expect(newer.statusCode).toBe(202);

    const listing = await call("GET", "/internal/v1/operator/contact-requests?limit=2", token);
    expect(listing.statusCode).toBe(200);
    expect(listing.json().contact_requests).toEqual([
      {
        id: newer.json().id,
        name: "Ben Ode",
        email: "ben@flip.test",
        company: null,
        message: "Do you cover Monroe County?",
        received_at: newer.json().received_at,
      },
      {
        id: older.json().id,
        name: "Ana Ruiz",
        email: "ana@brokerage.test",
        company: "Ruiz Realty",
        message: "We would like a Custom quote for three counties.",
        received_at: older.json().received_at,
      },
    ]);
  });
});
