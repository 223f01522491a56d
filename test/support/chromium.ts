// Debian's Chromium for the browser tests, driven by playwright-core: where it is, whether this
// machine has it (the browser tests skip without it), and how it is started.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";

const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);

/**
 * Headless, unsandboxed (the tests run as root), and with Chromium's own background traffic off:
 * on a closed network its update, sync and component checks are refused, many at a time.
 */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A browser for tests that open a context per case. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
}

export interface ChromiumPage {
  context: BrowserContext;
  page: Page;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** Chromium with a fresh profile of its own (`name` names its folder) and its one page. */
export async function openChromium(
  name: string,
  viewport: { width: number; height: number },
): Promise<ChromiumPage> {
  const profile = mkdtempSync(join(tmpdir(), `th-chromium-${name}-`));
  const close = async (context?: BrowserContext) => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  };
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport,
      args: ARGS,
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    return { context, page, close: () => close(context) };
  } catch (failure) {
    await close();
    throw failure;
  }
}
