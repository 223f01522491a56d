// The dashboard's key page in Debian's Chromium for an admin of every tier (decision 0380): the
// gateway serving the built app and the API on one origin, the keys service on real Postgres,
// Redis and Kafka. Screenshots land in test/artifacts/dashboard/.
import { mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, launchChromium } from "./support/chromium.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

const SHOTS = join(import.meta.dirname, "artifacts", "dashboard");
const PASSWORD = "a long dashboard passphrase";

let stack: EdgeStack;
let browser: Browser;
let origin: string;

const status = async (key: string) => (await stack.request("GET", "/v1/me", { key })).statusCode;

async function secretShown(page: Page): Promise<string> {
  const secret = (await page.getByTestId("secret-once").locator("code").textContent()) ?? "";
  expect(secret).toMatch(/^th_live_/);
  return secret;
}

describe.skipIf(!hasChromium)("the dashboard's key page in Chromium, for every tier", () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startEdgeStack();
    const gatewayHttp = stack.gateway.http;
    if (!gatewayHttp) {
      throw new Error("the gateway has no HTTP app");
    }
    await gatewayHttp.listen({ port: 0, host: "127.0.0.1" });
    origin = `http://127.0.0.1:${(gatewayHttp.server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it.each(["starter", "operator", "team", "custom"] as const)(
    "K2 and Authentication 6, 8 and 9: an admin of the %s tier sees the reminder only past 90 days, issues a key shown once, rotates it in two steps, and reports a compromise",
    async (tier) => {
      const tenant = await stack.startTrial(tier, { password: PASSWORD });
      await createAgedKeys(tenant);
      const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
      const page = await context.newPage();
      page.on("dialog", (dialog) => void dialog.accept());
      try {
        await page.goto(`${origin}/sign-in`);
        await page.getByLabel("Email").fill(tenant.email);
        await page.getByLabel("Password").fill(PASSWORD);
        await page.getByRole("button", { name: "Sign in" }).click();
        await page.getByRole("heading", { name: "Overview" }).waitFor();
        await page
          .getByRole("navigation", { name: "Dashboard" })
          .getByRole("link", { name: "API keys" })
          .click();

        // The reminder: on the key a minute past 90 days, not on the one a minute short of it.
        await page.getByRole("row", { name: /a minute past ninety/ }).waitFor();
        const reminders = page.getByRole("note").filter({ hasText: "days old" });
        await expect.poll(() => reminders.count()).toBe(1);
        await page
          .getByRole("row", { name: /a minute past ninety/ })
          .getByRole("note")
          .waitFor();
        expect(
          await page
            .getByRole("row", { name: /a minute short of ninety/ })
            .getByRole("note")
            .count(),
        ).toBe(0);

        // Issue: the secret once, never again after a reload.
        await page.getByLabel("Label").fill("web issued");
        await page.getByRole("button", { name: "Issue key" }).click();
        const issued = await secretShown(page);
        await page.getByRole("button", { name: "I have stored it" }).click();
        await page.reload();
        await page.getByRole("row", { name: /web issued/ }).waitFor();
        expect(await page.content()).not.toContain(issued);
        expect(await status(issued)).toBe(200);

        // Rotation, step one: a replacement, while the old key keeps working.
        await page
          .getByRole("button", { name: `Rotate web issued (…${issued.slice(-4)})` })
          .click();
        await page.getByText(/Step 1 of 2/).waitFor();
        const replacement = await secretShown(page);
        await page.getByRole("button", { name: "I have stored it" }).click();
        await page.getByText(`Being replaced by th_live_…${replacement.slice(-4)}`).waitFor();
        expect(await status(issued)).toBe(200);
        await page.screenshot({ path: join(SHOTS, `keys-${tier}-rotating.png`), fullPage: true });
        // Step two: the old key revoked, refused at once; the replacement works.
        const revoke = page.getByRole("button", {
          name: `Revoke web issued (…${issued.slice(-4)})`,
        });
        await revoke.click();
        await revoke.waitFor({ state: "detached" });
        expect(await status(issued)).toBe(401);
        expect(await status(replacement)).toBe(200);

        // Compromise: every key revoked, one fresh key shown once.
        await page
          .getByRole("button", { name: "Revoke every key and rotate webhook secrets" })
          .click();
        const fresh = await secretShown(page);
        await page
          .getByText(/key\(s\) revoked; webhook signing secrets are being rotated/)
          .waitFor();
        for (const old of [tenant.key, replacement]) {
          expect(await status(old)).toBe(401);
        }
        expect(await status(fresh)).toBe(200);
        await page.screenshot({ path: join(SHOTS, `keys-${tier}-compromise.png`), fullPage: true });
      } finally {
        await context.close();
      }
    },
    60_000,
  );
});

/**
 * Two keys around the reminder's edge: the trial's first key moved back to a minute short of 90
 * days, and a row a minute past 90 days written beside it (its secret is never needed).
 */
async function createAgedKeys(tenant: Awaited<ReturnType<EdgeStack["startTrial"]>>) {
  const pool = stack.harness.db.poolFor("keys");
  const { rows } = await pool.query<{ id: string }>(
    "SELECT id FROM api_keys WHERE tenant_id = $1",
    [tenant.tenantId],
  );
  const first = rows[0]?.id as string;
  await pool.query(
    `INSERT INTO api_keys (id, tenant_id, member_id, label, key_hash, last4, created_at,
                           pepper_version)
     SELECT $2, tenant_id, member_id, 'a minute past ninety', md5(random()::text) || md5(random()::text),
            'zzzz', now() - interval '90 days 1 minute', pepper_version
       FROM api_keys WHERE id = $1`,
    [first, `${first}_old`],
  );
  await pool.query(
    "UPDATE api_keys SET label = 'a minute short of ninety', created_at = now() - interval '89 days 23 hours 59 minutes' WHERE id = $1",
    [first],
  );
}
