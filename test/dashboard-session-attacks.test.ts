// The dashboard's sign-in and sessions as an attacker would try them, end to end on real
// Postgres, Redis and Kafka with one injected clock: guessing one account's password from one
// address or many, replaying a stolen refresh token before or after its owner refreshes, keeping
// a session alive across a password change or reset, starving refresh and sign-out from a busy
// address, and planting cookies from a sibling site. Decisions 0335, 0336, 0337 and 0339.
import { buildApp as buildGateway } from "@th/gateway/app";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardClient } from "./support/dashboard-client.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
// Near the real time, so the tokens' own expiry (checked against the real clock) stays sane.
let clock = Date.now();
const PASSWORD = "correct horse battery staple";
const WRONG = "not the password at all";
let ips = 0;
const nextIp = () => `192.0.2.${(++ips % 250) + 1}`;

beforeAll(async () => {
  stack = await startEdgeStack({ now: () => clock });
});
afterAll(() => stack.close());

type Client = ReturnType<typeof dashboardClient>;

async function signedIn(client: Client, email: string, password = PASSWORD) {
  const response = await client.signIn(email, password);
  expect(response.statusCode, response.body).toBe(201);
  return response;
}

/** Someone who copied the victim's cookies (and CSRF token) into a browser of their own. */
function thiefOf(victim: Client) {
  const thief = dashboardClient(stack, nextIp());
  for (const [name, cookie] of victim.jar) {
    thief.jar.set(name, { ...cookie });
  }
  const csrf = victim.csrf ?? "";
  return {
    thief,
    refresh: () =>
      thief.call("POST", "/v1/dashboard/session/refresh", { headers: { "x-csrf-token": csrf } }),
    read: () => thief.call("GET", "/v1/account", { headers: { "x-csrf-token": csrf } }),
  };
}

const refresh = (client: Client) => client.call("POST", "/v1/dashboard/session/refresh");

describe("guessing one account's password", () => {
  it("after twenty wrong passwords, the right one inside the lock gets exactly the answer a wrong one gets; once the back-off has passed it signs in and the count starts over", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const attacker = dashboardClient(stack, nextIp());
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      statuses.push((await attacker.signIn(tenant.email, WRONG)).statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 401, ...Array(16).fill(429)]);
    const wrong = await attacker.signIn(tenant.email, WRONG);
    const right = await attacker.signIn(tenant.email, PASSWORD);
    expect(right.statusCode).toBe(wrong.statusCode);
    const { request_id: _r, ...rightBody } = right.json();
    const { request_id: _w, ...wrongBody } = wrong.json();
    expect(rightBody).toEqual(wrongBody);
    expect(right.json()).toMatchObject({ error: "rate_limited", retry_after_seconds: 1 });
    expect(right.headers["retry-after"]).toBe(wrong.headers["retry-after"]);
    expect(right.headers["set-cookie"]).toBeUndefined();
    expect(attacker.jar.size).toBe(0);

    clock += 1_001;
    const owner = dashboardClient(stack, nextIp());
    await signedIn(owner, tenant.email);
    expect((await owner.call("GET", "/v1/account")).statusCode).toBe(200);
    // The success forgot the failures: four wrong passwords are free again.
    for (let i = 0; i < 4; i++) {
      expect((await attacker.signIn(tenant.email, WRONG)).statusCode).toBe(401);
    }
  });

  it("spread over many addresses still locks the account, and an unknown email locks the same way, so a lock tells nothing of who exists", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const sequence = async (email: string) => {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        statuses.push((await dashboardClient(stack, nextIp()).signIn(email, WRONG)).statusCode);
      }
      return statuses;
    };
    const known = await sequence(tenant.email);
    expect(known).toEqual([401, 401, 401, 401, ...Array(8).fill(429)]);
    expect(await sequence(`nobody-${clock}@acme.test`)).toEqual(known);
    // A fresh address and a different spelling of the email are the same account.
    const fresh = await dashboardClient(stack, nextIp()).signIn(
      tenant.email.toUpperCase(),
      PASSWORD,
    );
    expect(fresh.statusCode).toBe(429);
    expect(fresh.json().detail).toMatch(/for this account/);
  });

  it("cannot lock the owner out for longer than 15 minutes at a time, however long it goes on", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const waits: number[] = [];
    for (let i = 0; i < 20; i++) {
      const answer = await dashboardClient(stack, nextIp()).signIn(tenant.email, WRONG);
      if (answer.statusCode === 429) {
        waits.push(answer.json().retry_after_seconds);
        clock += answer.json().retry_after_seconds * 1000;
      }
    }
    expect(Math.max(...waits)).toBe(900);
    expect(waits.every((wait) => wait <= 900)).toBe(true);
    // The owner, arriving when the last lock has passed, gets in.
    await signedIn(dashboardClient(stack, nextIp()), tenant.email);
  });

  it("through the change-password form of a stolen session meets the same account lock", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const victim = dashboardClient(stack, nextIp());
    await signedIn(victim, tenant.email);
    const change = (current: string) =>
      victim.call("PUT", "/v1/dashboard/password", {
        body: { current_password: current, new_password: "the thief's own passphrase" },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await change(WRONG)).statusCode);
    }
    expect(statuses).toEqual([403, 403, 403, 403, 429, 429]);
    const right = await change(PASSWORD);
    expect(right.statusCode).toBe(429);
    expect(right.json().detail).toMatch(/for this account/);
  });
});

describe("refresh and sign-out from a busy address", () => {
  it("are not starved when the address's public window is full, while sign-in from it is refused", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const office = nextIp();
    const client = dashboardClient(stack, office);
    await signedIn(client, tenant.email);
    let contact = await stack.request("POST", "/v1/public/contact", { ip: office, body: {} });
    for (let i = 0; i < 40 && contact.statusCode !== 429; i++) {
      contact = await stack.request("POST", "/v1/public/contact", { ip: office, body: {} });
    }
    expect(contact.statusCode).toBe(429);
    expect((await refresh(client)).statusCode).toBe(200);
    expect((await client.call("DELETE", "/v1/dashboard/session")).statusCode).toBe(204);
    expect((await dashboardClient(stack, office).signIn(tenant.email, PASSWORD)).statusCode).toBe(
      429,
    );
  });
});

describe("a forged refresh token", () => {
  it("is refused and counted in the address's failed-authentication window, not waved through as public", async () => {
    const forger = nextIp();
    const forged = () =>
      stack.request("POST", "/v1/dashboard/session/refresh", {
        ip: forger,
        headers: { cookie: "th_refresh=eyJhbGciOiJIUzI1NiJ9.e30.forged", "x-csrf-token": "x" },
      });
    const first = await forged();
    expect(first.statusCode).toBe(401);
    expect(first.headers["x-ratelimit-limit"]).toBe("60");
    const second = await forged();
    expect(Number(second.headers["x-ratelimit-remaining"])).toBe(
      Number(first.headers["x-ratelimit-remaining"]) - 1,
    );
  });
});

describe("a stolen refresh token", () => {
  it("replayed after its owner refreshed ends the whole session: the thief's and the owner's tokens stop at once", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const owner = dashboardClient(stack, nextIp());
    await signedIn(owner, tenant.email);
    const stolen = thiefOf(owner);
    const before = owner.jar.get("th_refresh")?.value;
    expect((await refresh(owner)).statusCode).toBe(200);
    expect(owner.jar.get("th_refresh")?.value).not.toBe(before);

    clock += 11_000;
    expect((await stolen.refresh()).statusCode).toBe(401);
    expect((await refresh(owner)).statusCode).toBe(401);
    expect((await owner.call("GET", "/v1/account")).statusCode).toBe(401);
  });

  it("used before its owner refreshes gets the thief one turn; the owner's next refresh ends the session for both", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const owner = dashboardClient(stack, nextIp());
    await signedIn(owner, tenant.email);
    const stolen = thiefOf(owner);
    expect((await stolen.refresh()).statusCode).toBe(200);
    expect((await stolen.read()).statusCode).toBe(200);

    clock += 11_000;
    expect((await refresh(owner)).statusCode).toBe(401);
    expect((await stolen.refresh()).statusCode).toBe(401);
    expect((await stolen.read()).statusCode).toBe(401);
  });

  it("presented twice at once by two tabs of one browser keeps the session: one answer carries the next refresh token", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const browser = dashboardClient(stack, nextIp());
    await signedIn(browser, tenant.email);
    const [a, b] = await Promise.all([refresh(browser), refresh(browser)]);
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    const carriesRefresh = (answer: typeof a) =>
      ([answer.headers["set-cookie"] ?? []].flat() as string[]).some((line) =>
        line.startsWith("th_refresh="),
      );
    expect([carriesRefresh(a), carriesRefresh(b)].sort()).toEqual([false, true]);
    expect((await refresh(browser)).statusCode).toBe(200);
    expect((await browser.call("GET", "/v1/account")).statusCode).toBe(200);
  });
});

describe("a password change or reset", () => {
  /** A team member with a password, signed in; and the admin who manages them. */
  async function memberSignedIn() {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const admin = dashboardClient(stack, nextIp());
    await signedIn(admin, tenant.email);
    const email = `member-${++ips}-${clock}@acme.test`;
    const added = await admin.call("POST", "/v1/team/members", { body: { email, role: "member" } });
    expect(added.statusCode).toBe(201);
    const memberId = added.json().id as string;
    const link = await admin.call("POST", `/v1/team/members/${memberId}/password-token`);
    const set = await stack.request("POST", "/v1/public/password", {
      ip: nextIp(),
      body: { token: link.json().token, password: "member passphrase one" },
    });
    expect(set.statusCode).toBe(204);
    const member = dashboardClient(stack, nextIp());
    await signedIn(member, email, "member passphrase one");
    return { admin, member, memberId, email };
  }

  it("by an admin's reset link ends every session of the member: a thief's access and refresh tokens stop at once, and a new sign-in works", async () => {
    const { admin, member, memberId, email } = await memberSignedIn();
    const stolen = thiefOf(member);
    expect((await stolen.read()).statusCode).toBe(200);

    const reset = await admin.call("POST", `/v1/team/members/${memberId}/password-token`);
    expect(reset.json().purpose).toBe("reset");
    const set = await stack.request("POST", "/v1/public/password", {
      ip: nextIp(),
      body: { token: reset.json().token, password: "member passphrase two" },
    });
    expect(set.statusCode).toBe(204);

    expect((await stolen.read()).statusCode).toBe(401);
    expect((await stolen.refresh()).statusCode).toBe(401);
    expect((await member.call("GET", "/v1/account")).statusCode).toBe(401);
    expect((await refresh(member)).statusCode).toBe(401);
    const again = dashboardClient(stack, nextIp());
    await signedIn(again, email, "member passphrase two");
    expect((await again.call("GET", "/v1/account")).statusCode).toBe(200);
    expect((await refresh(again)).statusCode).toBe(200);
    // The admin's own session is another member's and goes on.
    expect((await admin.call("GET", "/v1/account")).statusCode).toBe(200);
  });

  it("by the member ends every session of theirs, this one included, and only the new password signs in", async () => {
    const { member, email } = await memberSignedIn();
    const other = dashboardClient(stack, nextIp());
    await signedIn(other, email, "member passphrase one");
    const changed = await member.call("PUT", "/v1/dashboard/password", {
      body: { current_password: "member passphrase one", new_password: "member passphrase three" },
    });
    expect(changed.statusCode).toBe(204);
    expect(member.jar.has("th_session")).toBe(false);

    expect((await other.call("GET", "/v1/account")).statusCode).toBe(401);
    expect((await refresh(other)).statusCode).toBe(401);
    const old = await dashboardClient(stack, nextIp()).signIn(email, "member passphrase one");
    expect(old.statusCode).toBe(401);
    await signedIn(dashboardClient(stack, nextIp()), email, "member passphrase three");
  });
});

describe("served over TLS", () => {
  let tls: Awaited<ReturnType<typeof buildGateway>>;

  beforeAll(async () => {
    tls = await buildGateway(
      { ...stack.harness, config: { ...stack.gatewayConfig, SESSION_COOKIE_HOST_PREFIX: true } },
      { now: () => clock },
    );
    await tls.http?.ready();
  });
  afterAll(async () => {
    await tls.stop();
    await tls.http?.close();
  });

  it("the session cookies are __Host- cookies (Secure, Path=/, no Domain), and a cookie planted without the prefix is not read", async () => {
    const tenant = await stack.startTrial("team", { password: PASSWORD });
    const browser = dashboardClient(stack, nextIp(), tls);
    await signedIn(browser, tenant.email);
    const lines = browser.setCookies.flat();
    for (const name of ["__Host-th_session", "__Host-th_refresh", "__Host-th_csrf"]) {
      const line = lines.find((each) => each.startsWith(`${name}=`)) ?? "";
      expect(line, name).toMatch(/; Secure/);
      expect(line, name).toMatch(/; Path=\/(;|$)/);
      expect(line, name).not.toMatch(/Domain=/i);
      expect(line, name).toMatch(/SameSite=Strict/);
    }
    expect(lines.some((line) => line.startsWith("th_"))).toBe(false);
    expect((await browser.call("GET", "/v1/account")).statusCode).toBe(200);
    expect((await refresh(browser)).statusCode).toBe(200);

    // A sibling subdomain can set `th_session` for the parent domain; this gateway never reads it.
    const access = browser.jar.get("__Host-th_session")?.value as string;
    const planted = await tls.http?.inject({
      method: "GET",
      url: "/v1/account",
      remoteAddress: nextIp(),
      headers: { cookie: `th_session=${access}` },
    });
    expect(planted?.statusCode).toBe(401);
  });
});
