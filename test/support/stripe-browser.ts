// A stack whose keys service bills through the Stripe provider pointed at the local server that
// answers Stripe's documented calls, its gateway listening, and Debian's Chromium (driven by
// playwright-core) with one page open: what the browser tests of sign-up and billing start from.
import { mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { StripePaymentProvider } from "@th/keys/payments";
import {
  FAKE_PRICE_AMOUNTS,
  FAKE_PRICE_IDS,
  type StripeFake,
  startStripeFake,
} from "@th/keys/testing/stripe";
import type { BrowserContext, Page } from "playwright-core";
import { type ChromiumPage, openChromium } from "./chromium.ts";
import { type EdgeStack, startEdgeStack } from "./edge-stack.ts";

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
    prices: FAKE_PRICE_AMOUNTS,
    now: options.now ?? (() => new Date()),
  });
  const opened: Partial<StripeBrowserStack> & { browser?: ChromiumPage } = { fake };
  const close = async () => {
    await opened.browser?.close();
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
          prices: FAKE_PRICE_IDS,
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
    opened.browser = await openChromium(options.name, {
      width: options.viewportWidth,
      height: 1000,
    });
    const { context, page } = opened.browser;
    return { stack, fake, context, page, origin, close };
  } catch (failure) {
    await close();
    throw failure;
  }
}
