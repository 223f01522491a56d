// The pipeline at 10,000 items in one tenant's pipeline, end to end through the gateway over
// HTTP (gateway, keys, parcels, ledger, matcher and the pipeline service in this process, on this
// machine's Postgres and Redis and a dev broker):
//   1. a generated county roll of ROWS parcels is ingested into the parcel store;
//   2. every parcel is added to one Custom tenant's pipeline, 100 folios a bulk add (each a lead
//      read, charged);
//   3. the board is listed: the first page of every stage's column, as the dashboard loads it,
//      and the first page of the whole list, repeatedly (all items in one column, then spread);
//   4. every item is moved once to another stage (one at a time unless --concurrency), each at the
//      version the board showed, the way a card is dragged.
// It prints p50/p99 of a board load, a column page and a move, and the CPU this process (every
// service of the stack and the client) spent per move. Target: a column page and a move under
// 50 ms p99.
// Run: node bench/pipeline.ts [--rows 10000] [--board-rounds 200] [--concurrency 1]
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { writeNalFile } from "@th/parcels/generate";
import { startEdgeStack } from "../test/support/edge-stack.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "10000" },
    "board-rounds": { type: "string", default: "200" },
    concurrency: { type: "string", default: "1" },
  },
});
const rows = Number(values.rows);
const boardRounds = Number(values["board-rounds"]);
const concurrency = Number(values.concurrency);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function summary(name: string, samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${name}: n=${samples.length} p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms, max ${(sorted.at(-1) ?? 0).toFixed(2)} ms`;
}

const stack = await startEdgeStack();
const dir = mkdtempSync(join(tmpdir(), "pipeline-bench-"));
try {
  const file = join(dir, "NAL23F202501.csv");
  await writeNalFile(file, { rows, seed: 45, countyNo: 23 });
  let started = performance.now();
  const folios = await stack.ingestSample(file);
  console.info(
    `ingested ${folios.length} parcels in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );

  const http = stack.gateway.http;
  if (!http) {
    throw new Error("no gateway");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  const base = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}`;
  const tenant = await stack.startTrial("custom");
  await stack.setCustomLimits(tenant.tenantId, {
    lead_views_per_month: rows * 2,
    rate_per_minute: 10_000_000,
  });
  const headers = { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" };
  async function call(method: string, path: string, body?: unknown) {
    const begun = performance.now();
    const response = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (response.status >= 300) {
      throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    }
    return { json, ms: performance.now() - begun };
  }

  started = performance.now();
  for (let at = 0; at < folios.length; at += 100) {
    await call("POST", "/v1/pipeline/items/batch", { folios: folios.slice(at, at + 100) });
  }
  const addSeconds = (performance.now() - started) / 1000;
  console.info(
    `added ${folios.length} items in ${addSeconds.toFixed(1)} s (${(folios.length / addSeconds).toFixed(0)} items/s, 100 a bulk add)`,
  );

  const stages = (await call("GET", "/v1/pipeline/stages")).json.data as { id: string }[];
  type Card = { id: string; version: number; stage_id: string };

  /** One board load: each stage's first 50 cards, as the dashboard asks, one column at a time. */
  async function measureBoard(label: string) {
    const boards: number[] = [];
    const columns: number[] = [];
    const lists: number[] = [];
    for (let round = 0; round < boardRounds; round++) {
      const begun = performance.now();
      for (const stage of stages) {
        columns.push((await call("GET", `/v1/pipeline/items?stage_id=${stage.id}&limit=50`)).ms);
      }
      boards.push(performance.now() - begun);
      lists.push((await call("GET", "/v1/pipeline/items?limit=50&sort=follow_up_on")).ms);
    }
    console.info(summary(`board (${stages.length} columns) ${label}`, boards));
    console.info(summary(`column page ${label}`, columns));
    console.info(summary(`list page, by follow-up ${label}`, lists));
  }

  await measureBoard("all in one column");

  // Every item, as listed page by page, to move each once.
  const cards: Card[] = [];
  let cursor: string | null = null;
  do {
    const page = (
      await call("GET", `/v1/pipeline/items?limit=200${cursor ? `&cursor=${cursor}` : ""}`)
    ).json as { data: Card[]; next_cursor: string | null };
    cards.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor !== null);

  const moves: number[] = [];
  started = performance.now();
  const cpuBefore = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const index = next++;
        const card = cards[index];
        if (card === undefined) {
          return;
        }
        const target = stages[1 + (index % (stages.length - 1))];
        const moved = await call("POST", `/v1/pipeline/items/${card.id}/move`, {
          stage_id: target?.id,
          version: card.version,
        });
        moves.push(moved.ms);
      }
    }),
  );
  const moveSeconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  // This process runs the gateway, the pipeline and every other service of the stack, and the
  // client: its CPU per move is what a move costs here besides Postgres, Redis and the broker.
  console.info(
    `CPU of this process per move: ${((cpu.user + cpu.system) / 1000 / moves.length).toFixed(2)} ms`,
  );
  console.info(summary(`move (${concurrency} at a time)`, moves));
  console.info(`moved ${moves.length} cards in ${moveSeconds.toFixed(1)} s`);

  await measureBoard("spread over the stages");
} finally {
  rmSync(dir, { recursive: true, force: true });
  await stack.close();
}
