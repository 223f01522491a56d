// The web dashboard end to end in Debian's Chromium, driven by playwright-core: the gateway
// (serving the built app and the API on one origin), keys, parcels, ledger, matcher and a
// webhook dispatcher on real Postgres, Redis and Kafka. Screenshots of every page land in
// test/artifacts/dashboard/.
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { firstLoadReport } from "@th/dashboard/build";
import { DASHBOARD_DIST } from "@th/dashboard/dist";
import { buildApp as buildGateway } from "@th/gateway/app";
import type { HttpApp } from "@th/service-kit";
import { signedInject } from "@th/service-kit/testing";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChromiumPage, hasChromium, openChromium } from "./support/chromium.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

const SHOTS = join(import.meta.dirname, "artifacts", "dashboard");
const PASSWORD = "a long dashboard passphrase";

let stack: EdgeStack;
let hooks: WebhookStack;
let receiver: Receiver;
let context: BrowserContext;
let page: Page;
let browser: ChromiumPage;
let origin: string;
let tenant: Awaited<ReturnType<EdgeStack["startTrial"]>>;
let folios: string[];

async function shot(name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function go(label: string) {
  await page
    .getByRole("navigation", { name: "Dashboard" })
    .getByRole("link", { name: label })
    .click();
  await page.getByRole("heading", { level: 1 }).first().waitFor();
}

async function remainingViews(): Promise<number> {
  const text = (await page.getByTestId("lead-views-remaining").textContent()) ?? "";
  return Number(text.replaceAll(",", ""));
}

describe.skipIf(!hasChromium)("the web dashboard in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    hooks = await startWebhookStack();
    const dispatcher = await hooks.startDispatcher();
    const dispatcherHttp = dispatcher.http;
    if (!dispatcherHttp) {
      throw new Error("the dispatcher has no HTTP app");
    }
    await dispatcherHttp.listen({ port: 0, host: "127.0.0.1" });
    const dispatcherPort = (dispatcherHttp.server.address() as AddressInfo).port;
    stack = await startEdgeStack({
      gatewayEnv: { DISPATCHER_URL: `http://127.0.0.1:${dispatcherPort}` },
    });
    folios = await stack.ingestSample();
    const gatewayHttp = stack.gateway.http;
    if (!gatewayHttp) {
      throw new Error("the gateway has no HTTP app");
    }
    await gatewayHttp.listen({ port: 0, host: "127.0.0.1" });
    origin = `http://127.0.0.1:${(gatewayHttp.server.address() as AddressInfo).port}`;
    // The receiver refuses the first delivery (410 dead-letters at once) and accepts replays.
    receiver = await startReceiver(({ seen }) => (seen === 1 ? 410 : 200));

    tenant = await stack.startTrial("team", { password: PASSWORD });
    await hooks.publishTenant(tenant.tenantId, "team");
    // A key issued 120 days ago, for the rotation reminder.
    const old = await stack.request("POST", "/v1/team/api-keys", {
      key: tenant.key,
      body: { label: "legacy CRM" },
    });
    await stack.harness.db
      .poolFor("keys")
      .query("UPDATE api_keys SET created_at = now() - interval '120 days' WHERE id = $1", [
        old.json().id,
      ]);

    browser = await openChromium("dashboard", { width: 1360, height: 900 });
    ({ context, page } = browser);
    page.on("dialog", (dialog) => void dialog.accept());
    page.on("console", (message) => {
      if (message.type() === "error") {
        console.error(`page console: ${message.text()}`);
      }
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await stack?.close();
    await hooks?.close();
  });

  it("loads under 250 KB of compressed JavaScript", () => {
    const report = firstLoadReport(DASHBOARD_DIST);
    console.info(
      `dashboard first load: ${(report.jsGzipBytes / 1024).toFixed(1)} KiB JS + ${(report.cssGzipBytes / 1024).toFixed(1)} KiB CSS, gzip (${report.files.map((file) => `${file.file} ${file.gzipBytes} B`).join(", ")})`,
    );
    expect(report.jsGzipBytes).toBeGreaterThan(0);
    expect(report.jsGzipBytes).toBeLessThan(250 * 1024);
  });

  it("signs in with email and password and lands on the overview", async () => {
    await page.goto(`${origin}/`);
    await page.getByRole("heading", { name: "Sign in to your dashboard" }).waitFor();
    await shot("01-sign-in");
    await page.getByLabel("Email").fill(tenant.email);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("That email and password do not match an account.").waitFor();
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByText("Daily lead-views").waitFor();
    await page.getByText(/Trial: 14 days left/).waitFor();
    expect(page.url()).toBe(`${origin}/overview`);
    const cookies = await context.cookies(origin);
    const session = cookies.find((cookie) => cookie.name === "th_session");
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict" });
    await shot("02-overview");
  });

  it("issues a key, shows its secret once, revokes it, and reminds about a key older than 90 days", async () => {
    await go("API keys");
    await page.getByText(/legacy CRM/).waitFor();
    await expect.poll(() => page.getByRole("note").filter({ hasText: "days old" }).count()).toBe(1);
    await page.getByLabel("Label").fill("web issued");
    await page.getByRole("button", { name: "Issue key" }).click();
    const secret = (await page.getByTestId("secret-once").locator("code").textContent()) ?? "";
    expect(secret).toMatch(/^th_live_/);
    await shot("03-keys-secret-once");
    await page.getByRole("button", { name: "I have stored it" }).click();
    await page.reload();
    await page.getByText(/web issued/).waitFor();
    expect(await page.content()).not.toContain(secret);
    const revoke = page.getByRole("button", { name: `Revoke web issued (…${secret.slice(-4)})` });
    await revoke.click();
    await revoke.waitFor({ state: "detached" });
    const refused = await stack.request("GET", "/v1/me", { key: secret });
    expect(refused.statusCode).toBe(401);
    await shot("04-keys");
  });

  it("creates a watchlist, showing the API's validation messages first", async () => {
    await go("Watchlists");
    await page.getByRole("button", { name: "New watchlist" }).click();
    await page.getByLabel("Name").fill("Miami-Dade absentee owners");
    await page.getByLabel("Counties").fill("99");
    await page.getByRole("button", { name: "Create watchlist" }).click();
    await page
      .getByRole("alert")
      .getByText(/DOR county number/)
      .first()
      .waitFor();
    await shot("05-watchlist-validation");
    await page.getByLabel("Counties").fill("23");
    await page.getByRole("checkbox", { name: "Absentee owner" }).last().check();
    await page.getByRole("button", { name: "Create watchlist" }).click();
    await page.getByRole("heading", { name: "Miami-Dade absentee owners" }).waitFor();
    await page.getByRole("button", { name: "JSON" }).waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Run now" }).click();
    await page.getByText(/Manual run (succeeded|failed)/).waitFor({ timeout: 30_000 });
    await shot("06-watchlists");
  });

  it("expands a lead for one lead-view, and not another the same day", async () => {
    await go("Leads");
    await page.getByRole("button", { name: "Search" }).click();
    const first = page.getByTestId("lead-row").first();
    await first.waitFor();
    await page.getByTestId("lead-views-remaining").waitFor();
    const before = await remainingViews();
    await first.getByRole("button", { name: "Show full record · 1 lead-view" }).click();
    await first.getByTestId("lead-record").waitFor();
    await expect.poll(remainingViews).toBe(before - 1);
    await shot("07-leads-expanded");
    await first.getByRole("button", { name: "Hide record" }).click();
    await first.getByRole("button", { name: "Show full record again" }).click();
    await first.getByTestId("lead-record").waitFor();
    await page.waitForTimeout(300);
    expect(await remainingViews()).toBe(before - 1);
  });

  it("searches leads by the filters typed in, and says when none match", async () => {
    await go("Leads");
    await page.getByLabel("Min just value ($)").fill("999999999999");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByText("No parcel matches these filters.").waitFor();
    await page.getByLabel("Min just value ($)").fill("");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByTestId("lead-row").first().waitFor();
    expect(await page.getByText("No parcel matches these filters.").count()).toBe(0);
  });

  it("downloads the CSV export from its own link, and lets no page of another origin spend a lead-view through the session cookie", async () => {
    await go("Leads");
    // Only the header row: the download is the check, not its size.
    await page.getByLabel("Min just value ($)").fill("999999999999");
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Export CSV (1 lead-view per row)" }).click(),
    ]);
    expect(await download.failure()).toBeNull();
    const csv = readFileSync((await download.path()) as string, "utf8");
    expect(csv.split("\r\n")[0]).toMatch(/^folio,/);
    await page.getByLabel("Min just value ($)").fill("");
    // A page of another origin on the same site (a sibling subdomain; here another port): the
    // SameSite=Strict session cookie rides along with its <img>, and the read is refused.
    const left = async () =>
      Number(
        (await stack.request("GET", "/v1/account", { key: tenant.key })).headers[
          "x-quota-lead-views-remaining"
        ],
      );
    const before = await left();
    const folio = folios[folios.length - 1] as string;
    const attacker = createServer((_request, response) => {
      response.setHeader("content-type", "text/html; charset=utf-8");
      response.end(`<!doctype html><img src="${origin}/v1/leads/${folio}">`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    const evil = await context.newPage();
    try {
      // The browser withholds the answer from the page either way (opaque response blocking):
      // the attack needs no answer, only the server's charge.
      const sent = new Promise<void>((resolve) => {
        const done = (request: { url(): string }) => {
          if (request.url().includes("/v1/leads/")) {
            resolve();
          }
        };
        evil.on("requestfinished", done);
        evil.on("requestfailed", done);
      });
      await evil.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`);
      await sent;
    } finally {
      await evil.close();
      attacker.close();
    }
    expect(await left()).toBe(before);
  });

  it("subscribes a webhook with its secret shown once, and replays a dead letter", async () => {
    await go("Webhooks");
    const withCredentials = new URL(receiver.url);
    withCredentials.username = "user";
    withCredentials.password = "secret";
    await page.getByLabel("Endpoint URL").fill(withCredentials.href);
    await page.getByRole("button", { name: "Subscribe" }).click();
    await page.getByRole("alert").getByText("url must not carry credentials").first().waitFor();
    await page.getByLabel("Endpoint URL").fill(receiver.url);
    await page.getByRole("button", { name: "Subscribe" }).click();
    const secret = (await page.getByTestId("secret-once").locator("code").textContent()) ?? "";
    expect(secret).toMatch(/^whsec_/);
    expect(await page.getByText("url must not carry credentials").count()).toBe(0);
    await page.getByRole("button", { name: "I have stored it" }).click();
    const watchlistId = await page.getByLabel("Watchlist").inputValue();
    await hooks.tenantApplied(tenant.tenantId);
    const match = hooks.match(tenant.tenantId, watchlistId);
    await hooks.publishMatches([match]);
    await waitFor(async () => receiver.received.length >= 1, { what: "first delivery" });
    await page.getByRole("button", { name: "Delivery log" }).click();
    await page.getByRole("button", { name: "Dead letters" }).click();
    const row = page.getByTestId("delivery-row").first();
    await expect
      .poll(
        async () => {
          await page.getByRole("button", { name: "All deliveries" }).click();
          await page.getByRole("button", { name: "Dead letters" }).click();
          return row.count();
        },
        { timeout: 20_000 },
      )
      .toBe(1);
    await shot("08-webhooks-dead-letter");
    await row.getByRole("button", { name: "Replay" }).click();
    await page.getByText(/queued for replay/).waitFor();
    await waitFor(async () => receiver.received.some((request) => request.status === 200), {
      what: "replayed delivery",
    });
    await shot("09-webhooks-replayed");
  }, 60_000);

  it("shows the team, the plan and the MCP setup", async () => {
    await go("Team");
    await page.getByText(tenant.email).first().waitFor();
    await shot("10-team");
    await go("Plan");
    await page.getByRole("heading", { name: "Tiers" }).waitFor();
    // The plan shows the tiers; changing or cancelling is Billing's, one link away.
    await page.getByRole("main").getByRole("link", { name: "Billing" }).click();
    await page.getByRole("heading", { name: "Change tier" }).waitFor();
    await go("Plan");
    await shot("11-plan");
    await go("MCP & exports");
    expect((await page.getByTestId("mcp-snippet").textContent()) ?? "").toContain(
      "TERMINAL_HOUSE_API_KEY",
    );
    await shot("12-mcp-and-exports");
    await go("Overview");
    await page.getByText("Daily lead-views").waitFor();
    await shot("13-overview-after");
  });

  it("removes a member, keeping their keys unless revoking them is chosen, and shows who issued a kept key", async () => {
    const added = await stack.request("POST", "/v1/team/members", {
      key: tenant.key,
      body: { email: "leaver@acme.test", role: "admin" },
    });
    expect(added.statusCode).toBe(201);
    const memberId = added.json().id as string;
    // A key the member issued (through the keys service, as their own call would).
    const keysHttp = stack.keys.http as HttpApp;
    const issued = await keysHttp.inject(
      signedInject(keysHttp, "keys", {
        method: "POST",
        url: "/internal/v1/api-keys",
        headers: {
          "x-th-tenant-id": tenant.tenantId,
          "x-th-member-id": memberId,
          "x-th-key-id": "key_test",
        },
        body: { label: "leaver's sync" },
      }),
    );
    const memberKey = issued?.json().secret as string;
    await go("Team");
    await page
      .getByRole("row", { name: /leaver@acme.test/ })
      .getByRole("button", { name: "Remove" })
      .click();
    const revokeBox = page.getByLabel("Also revoke the API keys leaver@acme.test issued");
    expect(await revokeBox.isChecked()).toBe(false);
    await shot("10b-team-remove");
    await page.getByRole("button", { name: "Remove member" }).click();
    await page.getByRole("row", { name: /leaver@acme.test/ }).waitFor({ state: "detached" });
    expect((await stack.request("GET", "/v1/me", { key: memberKey })).statusCode).toBe(200);
    await go("API keys");
    await page
      .getByRole("row", { name: /leaver's sync/ })
      .getByText("(issued by a removed member)")
      .waitFor();
    await shot("10c-keys-removed-member");
  });

  it("signs out: the session's cookies are gone and the API refuses the page", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to your dashboard" }).waitFor();
    const status = await page.evaluate(async () => (await fetch("/v1/account")).status);
    expect(status).toBe(401);
    const names = (await context.cookies(origin)).map((cookie) => cookie.name);
    expect(names).not.toContain("th_session");
  });

  it("asks which account to open when the email and password open several", async () => {
    const second = await stack.request("POST", "/v1/public/trials", {
      ip: "198.51.100.251",
      body: {
        tier: "operator",
        company: "Second Shop Realty",
        admin_email: tenant.email,
        payment_method: "pm_card_visa",
        admin_password: PASSWORD,
      },
    });
    expect(second.statusCode).toBe(201);
    await page.getByLabel("Email").fill(tenant.email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    const account = page.getByLabel("Account");
    await account.waitFor();
    expect(await account.locator("option").allTextContents()).toHaveLength(2);
    await account.selectOption({ label: "Second Shop Realty" });
    await shot("14-choose-account");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByText("Second Shop Realty").first().waitFor();
  });

  it("served as over TLS, with `__Host-` cookies, signs in and changes state with the CSRF cookie the page reads", async () => {
    const tls = await buildGateway({
      ...stack.harness,
      config: { ...stack.gatewayConfig, SESSION_COOKIE_HOST_PREFIX: true },
    });
    const tlsHttp = tls.http as HttpApp;
    await tlsHttp.listen({ port: 0, host: "127.0.0.1" });
    const tlsOrigin = `http://127.0.0.1:${(tlsHttp.server.address() as AddressInfo).port}`;
    const member = await stack.startTrial("team", { password: PASSWORD });
    const tab = await context.newPage();
    try {
      await tab.goto(`${tlsOrigin}/`);
      await tab.getByLabel("Email").fill(member.email);
      await tab.getByLabel("Password").fill(PASSWORD);
      await tab.getByRole("button", { name: "Sign in" }).click();
      await tab.getByRole("heading", { name: "Overview" }).waitFor();
      const cookies = await context.cookies(tlsOrigin);
      for (const name of ["__Host-th_session", "__Host-th_refresh", "__Host-th_csrf"]) {
        expect(
          cookies.find((cookie) => cookie.name === name),
          name,
        ).toMatchObject({
          secure: true,
          path: "/",
          sameSite: "Strict",
        });
      }
      await tab
        .getByRole("navigation", { name: "Dashboard" })
        .getByRole("link", { name: "API keys" })
        .click();
      await tab.getByLabel("Label").fill("issued over TLS");
      await tab.getByRole("button", { name: "Issue key" }).click();
      const secret = (await tab.getByTestId("secret-once").locator("code").textContent()) ?? "";
      expect(secret).toMatch(/^th_live_/);
    } finally {
      await tab.close();
      await tls.stop();
      await tlsHttp.close();
    }
  });
});
