// A stack whose keys service bills through the Stripe provider pointed at the local server that
// answers Stripe's documented calls, its gateway listening, and Debian's Chromium (driven by
// playwright-core) with one page open: what the browser tests of sign-up and billing start from.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StripePaymentProvider } from "@th/keys/payments";
import { type StripeFake, startStripeFake } from "@th/keys/testing/stripe";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { type EdgeStack, startEdgeStack } from "./edge-stack.ts";

const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
/** Where the browser tests' screenshots land. */
export const SHOTS = join(import.meta.dirname, "..", "artifacts", "dashboard");

export interface StripeBrowserStack {
  stack: EdgeStack;
  fake: StripeFake;
  context: BrowserContext;
  page: Page;
  /** The gateway's public origin, `http://127.0.0.1:<port>`. */
  origin: string;
  close(): Promise<void>;
}

export interface StripeBrowserOptions {
  /** Names the Chromium profile folder and the secret key. */
  name: string;
  webhookSecret: string;
  /** The card processor's clock and the keys service's; real time when absent. */
  now?: () => Date;
  gatewayEnv?: Record<string, string>;
  viewportWidth: number;
}

export async function startStripeBrowserStack(
  options: StripeBrowserOptions,
): Promise<StripeBrowserStack> {
  mkdirSync(SHOTS, { recursive: true });
  const fake = await startStripeFake({
    webhookSecret: options.webhookSecret,
    prices: {
      price_starter: 4_900,
      price_operator: 14_900,
      price_team: 39_900,
      price_custom: 99_900,
    },
    now: options.now ?? (() => new Date()),
  });
  const opened: Partial<StripeBrowserStack> & { profile?: string } = { fake };
  const close = async () => {
    await opened.context?.close();
    if (opened.profile) {
      rmSync(opened.profile, { recursive: true, force: true });
    }
    await opened.stack?.close();
    await fake.close();
  };
  try {
    const stack = await startEdgeStack({
      ...(options.gatewayEnv ? { gatewayEnv: options.gatewayEnv } : {}),
      keysOptions: {
        ...(options.now ? { now: options.now } : {}),
        payments: new StripePaymentProvider({
          secretKey: `sk_test_${options.name}`,
          webhookSigningSecret: options.webhookSecret,
          prices: {
            starter: "price_starter",
            operator: "price_operator",
            team: "price_team",
            custom: "price_custom",
          },
          timeoutMs: 2_000,
          api: fake.api,
        }),
      },
    });
    opened.stack = stack;
    await stack.gateway.start();
    const gatewayHttp = stack.gateway.http;
    if (!gatewayHttp) {
      throw new Error("the gateway has no HTTP app");
    }
    await gatewayHttp.listen({ port: 0, host: "127.0.0.1" });
    const origin = `http://127.0.0.1:${(gatewayHttp.server.address() as AddressInfo).port}`;
    opened.profile = mkdtempSync(join(tmpdir(), `th-chromium-${options.name}-`));
    const context = await chromium.launchPersistentContext(opened.profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: options.viewportWidth, height: 1000 },
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    opened.context = context;
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    return { stack, fake, context, page, origin, close };
  } catch (failure) {
    await close();
    throw failure;
  }
}
