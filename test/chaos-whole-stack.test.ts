// kill -9 of the whole stack (`npm start`: the supervisor, the dev broker and all seven services at
// once) while a watchlist run's webhooks are being delivered, then `npm start` again on the same
// database, Redis and broker directory: the run finishes, and every match it found is delivered
// (every webhook id of the matcher's matches arrives at least once).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serverUrl } from "@th/db/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryCounts, recordFault } from "./support/chaos-report.ts";
import { type RunningStart, startNpmStart } from "./support/npm-start.ts";
import { waitFor } from "./support/webhook-stack.ts";

let first: RunningStart | undefined;
let second: RunningStart | undefined;
let receiver: Server;
const received: { webhookId: string; at: number }[] = [];

beforeAll(async () => {
  receiver = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      received.push({ webhookId: String(request.headers["x-flpf-webhook-id"]), at: Date.now() });
      // Slow enough that the deliveries are still going when the stack is killed.
      setTimeout(() => response.writeHead(200).end(), 150);
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  first = await startNpmStart({ WEBHOOK_ALLOW_LOOPBACK_HTTP: "true" });
}, 180_000);

afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  if (second) {
    await second.stop();
  } else if (first) {
    await first.kill9();
    await first.stop();
  }
}, 120_000);

async function call(stack: RunningStart, method: string, path: string, body?: unknown) {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${stack.apiKey}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  expect(response.status, `${path}: ${text}`).toBeLessThan(300);
  return JSON.parse(text) as Record<string, unknown>;
}

describe("kill -9 of the whole stack, then npm start again", () => {
  it("finishes the run and delivers every match it found: nothing lost", async () => {
    const stack = first as RunningStart;
    const watchlist = await call(stack, "POST", "/v1/watchlists", {
      name: "whole stack",
      recipe: { filters: { counties: [23] } },
    });
    const port = (receiver.address() as AddressInfo).port;
    await call(stack, "POST", `/v1/watchlists/${watchlist.id}/webhooks`, {
      url: `http://127.0.0.1:${port}/hooks`,
      events: ["watchlist.match"],
    });
    await call(stack, "POST", `/v1/watchlists/${watchlist.id}/run`, {});
    await waitFor(() => received.length >= 10, { timeoutMs: 60_000, what: "deliveries under way" });

    await stack.kill9();
    const restartedAt = Date.now();
    second = await startNpmStart({ WEBHOOK_ALLOW_LOOPBACK_HTTP: "true" }, stack.stores);
    // Recovery runs from the restart's launch to the first delivery after it, the whole stack's
    // start-up (migrations, broker, seven services, the demo seed) included.
    const afterRestart = () => received.filter((request) => request.at > restartedAt);
    await waitFor(() => afterRestart().length > 0, {
      timeoutMs: 30_000,
      what: "a delivery after the restart",
    });
    const recoveryMs = (afterRestart()[0]?.at ?? Date.now()) - restartedAt;
    const url = new URL(serverUrl());
    url.pathname = `/${stack.stores.database}`;
    const db = new pg.Client({ connectionString: url.toString() });
    await db.connect();
    try {
      await waitFor(
        async () =>
          (
            await db.query(
              "SELECT 1 FROM matcher.manual_runs WHERE watchlist_id = $1 AND status NOT IN ('queued', 'running')",
              [watchlist.id],
            )
          ).rowCount,
        { timeoutMs: 60_000, intervalMs: 250, what: "the run to finish" },
      );
      const matches = Number(
        (
          await db.query<{ n: string }>(
            "SELECT count(*) AS n FROM matcher.matches WHERE watchlist_id = $1",
            [watchlist.id],
          )
        ).rows[0]?.n,
      );
      expect(matches).toBeGreaterThan(0);
      const deliveryIds = async () =>
        (
          await db.query<{ id: string }>(
            "SELECT id FROM dispatcher.deliveries WHERE watchlist_id = $1",
            [watchlist.id],
          )
        ).rows.map((row) => row.id);
      await waitFor(async () => (await deliveryIds()).length >= matches, {
        timeoutMs: 30_000,
        intervalMs: 250,
        what: "a delivery row for every match",
      });
      const ids = await deliveryIds();
      await waitFor(
        () => {
          const got = new Set(received.map((request) => request.webhookId));
          return ids.every((id) => got.has(id));
        },
        { timeoutMs: 90_000, intervalMs: 250, what: "every webhook id" },
      );
      const unique = new Set(received.map((request) => request.webhookId));
      expect(ids).toHaveLength(matches);
      expect(ids.filter((id) => !unique.has(id))).toEqual([]);
      recordFault({
        fault: "kill -9 of the whole stack, then npm start",
        ...deliveryCounts(matches, {
          received: unique.size,
          duplicates: received.length - unique.size,
          lost: ids.filter((id) => !unique.has(id)).length + Math.max(0, matches - ids.length),
        }),
        recoveryMs,
      });
    } finally {
      await db.end();
    }
  }, 300_000);
});
