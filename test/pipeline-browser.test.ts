// The pipeline's pages in Debian's Chromium, driven by playwright-core, against the real stack
// (gateway serving the built app, keys, parcels, ledger, matcher, pipeline): adding from a lead
// and from a watchlist's matches, the board with cards dragged between columns (a stale drag
// told so), an item's notes, follow-up and history, the list's filters and what is due today.
// Screenshots land in test/artifacts/pipeline/.
import { mkdirSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChromiumPage, hasChromium, openChromium } from "./support/chromium.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

const SHOTS = join(import.meta.dirname, "artifacts", "pipeline");
const PASSWORD = "a long pipeline passphrase";

let stack: EdgeStack;
let page: Page;
let browser: ChromiumPage;
let origin: string;
let tenant: Awaited<ReturnType<EdgeStack["startTrial"]>>;

async function shot(name: string, fullPage = true) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
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

/** The tenant's items as the API lists them. */
async function items(query = "") {
  const answer = await stack.request("GET", `/v1/pipeline/items?limit=200${query}`, {
    key: tenant.key,
  });
  return answer.json().data as {
    id: string;
    folio: string;
    stage_id: string;
    version: number;
    tags: string[];
  }[];
}

async function stages() {
  return (await stack.request("GET", "/v1/pipeline/stages", { key: tenant.key })).json().data as {
    id: string;
    name: string;
  }[];
}

function column(name: string) {
  return page.locator(`[data-testid="pipeline-column"][data-stage="${name}"]`);
}

describe.skipIf(!hasChromium)("the pipeline in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startEdgeStack();
    await stack.ingestSample();
    const gatewayHttp = stack.gateway.http;
    if (!gatewayHttp) {
      throw new Error("the gateway has no HTTP app");
    }
    await gatewayHttp.listen({ port: 0, host: "127.0.0.1" });
    origin = `http://127.0.0.1:${(gatewayHttp.server.address() as AddressInfo).port}`;
    tenant = await stack.startTrial("operator", { password: PASSWORD });
    // A watchlist whose manual run has found matches, for adding them from its page.
    const watchlist = await stack.request("POST", "/v1/watchlists", {
      key: tenant.key,
      body: { name: "Miami-Dade", recipe: { filters: { counties: [23] } } },
    });
    await stack.request("POST", `/v1/watchlists/${watchlist.json().id}/run`, { key: tenant.key });
    await stack.matcher.runs.settle();

    browser = await openChromium("pipeline", { width: 1600, height: 1000 });
    ({ page } = browser);
    page.on("dialog", (dialog) => void dialog.accept());
    await page.goto(`${origin}/`);
    await page.getByLabel("Email").fill(tenant.email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it("adds a parcel to the pipeline from a lead's row for one lead-view", async () => {
    await go("Leads");
    await page.getByRole("button", { name: "Search" }).click();
    const first = page.getByTestId("lead-row").first();
    await first.waitFor();
    await page.getByTestId("lead-views-remaining").waitFor();
    const before = await remainingViews();
    await first.getByRole("button", { name: "Add to pipeline" }).click();
    await first.getByRole("link", { name: "Open in pipeline" }).waitFor();
    await expect.poll(remainingViews).toBe(before - 1);
    expect(await items()).toHaveLength(1);
    await shot("01-lead-added");
  });

  it("adds a watchlist's listed matches at once", async () => {
    await go("Watchlists");
    const add = page.getByRole("button", { name: /^Add these \d+ matches to the pipeline$/ });
    await add.click();
    await page.getByText(/Added \d+ to the pipeline; \d+ already there\./).waitFor();
    expect((await items()).length).toBeGreaterThan(1);
    await shot("02-matches-added");
  });

  it("shows a column per stage and moves a card dragged to another column", async () => {
    await go("Pipeline");
    await page.getByTestId("pipeline-board").waitFor();
    const names = await page
      .getByTestId("pipeline-column")
      .evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-stage")));
    expect(names).toEqual([
      "New",
      "Contacted",
      "Follow-up",
      "Offer made",
      "Under contract",
      "Closed won",
      "Closed lost",
    ]);
    const card = column("New").getByTestId("pipeline-card").first();
    const folio = (await card.getAttribute("data-folio")) as string;
    await card.dragTo(column("Contacted"));
    await column("Contacted").locator(`[data-folio="${folio}"]`).waitFor();
    const contacted = (await stages()).find((stage) => stage.name === "Contacted")?.id;
    await expect
      .poll(async () => (await items()).find((item) => item.folio === folio)?.stage_id)
      .toBe(contacted);
    await shot("03-board-dragged", false);
  });

  it("tells the member when the card was moved by someone else since the board loaded, and reloads it", async () => {
    await page.reload();
    await page.getByTestId("pipeline-board").waitFor();
    const card = column("New").getByTestId("pipeline-card").first();
    const folio = (await card.getAttribute("data-folio")) as string;
    const item = (await items()).find((each) => each.folio === folio);
    const offer = (await stages()).find((stage) => stage.name === "Offer made")?.id;
    // Another member moves it first, through the API.
    const elsewhere = await stack.request("POST", `/v1/pipeline/items/${item?.id}/move`, {
      key: tenant.key,
      body: { stage_id: offer, version: item?.version },
    });
    expect(elsewhere.statusCode).toBe(200);
    await card.dragTo(column("Closed won"));
    await page.getByText(/Someone else changed this item since you loaded it/).waitFor();
    await column("Offer made").locator(`[data-folio="${folio}"]`).waitFor();
    expect((await items()).find((each) => each.folio === folio)?.stage_id).toBe(offer);
    await shot("04-board-stale-drag", false);
  });

  it("opens an item: a note, a follow-up today and tags are saved and show in its history", async () => {
    const card = column("Contacted").getByTestId("pipeline-card").first();
    await card.getByRole("link").click();
    await page.getByTestId("pipeline-history").waitFor();
    await page.getByLabel("New note").fill("Owner asked to call back after six");
    await page.getByRole("button", { name: "Add note" }).click();
    await page
      .getByTestId("pipeline-notes")
      .getByText("Owner asked to call back after six")
      .waitFor();
    const today = new Date().toISOString().slice(0, 10);
    await page.getByLabel("Next follow-up (UTC day)").fill(today);
    await page.getByLabel("Tags").fill("hot, call-back");
    await page.getByRole("button", { name: "Save follow-up and tags" }).click();
    await page
      .getByTestId("pipeline-history")
      .getByText(/set the tags to hot, call-back/)
      .waitFor();
    await page
      .getByTestId("pipeline-history")
      .getByText(/added a note/)
      .waitFor();
    await page
      .getByTestId("pipeline-history")
      .getByText(/moved it from New to Contacted/)
      .waitFor();
    await page.getByRole("button", { name: "Assign to me" }).click();
    await page
      .getByTestId("pipeline-history")
      .getByText(/assigned it to/)
      .waitFor();
    await page.getByRole("button", { name: "Unassign me" }).waitFor();
    await shot("05-item");
  });

  it("lists what is due today, and filters the list by tag", async () => {
    await go("Pipeline");
    const views = page.getByRole("navigation", { name: "Pipeline views" });
    await views.getByRole("link", { name: "Due today" }).click();
    await expect.poll(() => page.getByTestId("pipeline-row").count()).toBe(1);
    await shot("06-due-today");
    await views.getByRole("link", { name: "List" }).click();
    await expect.poll(() => page.getByTestId("pipeline-row").count()).toBeGreaterThan(1);
    await page.getByLabel("Tag", { exact: true }).fill("hot");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => page.getByTestId("pipeline-row").count()).toBe(1);
    expect((await items("&tag=hot")).length).toBe(1);
    await shot("07-list-filtered");
  });
});
