// Create a watchlist and a webhook on it, start a manual run, then receive the delivery on a
// local server and verify its signature.
//   TERMINAL_HOUSE_API_KEY=th_live_... node examples/node/webhook.ts
// Deliveries go to HTTPS URLs only. On your machine, either give WEBHOOK_URL a public HTTPS
// tunnel to RECEIVER_PORT, or start the stack with WEBHOOK_ALLOW_LOOPBACK_HTTP=true (development
// only) to let it deliver to http://127.0.0.1.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@th/client";
import { createMemoryDedupe, nodeHandler } from "@th/webhooks";

const client = createClient({
  baseUrl: process.env.TERMINAL_HOUSE_URL ?? "http://127.0.0.1:8080",
});
const timeoutSeconds = Number(process.env.WAIT_SECONDS ?? 60);

// 1. A watchlist: Miami-Dade parcels worth $5.5 million or more (one in the sample roll).
const { data: watchlist } = await client.watchlists.create({
  name: "Quickstart: Miami-Dade over $5.5M",
  recipe: { filters: { counties: [23], just_value: { min: 5_500_000 } } },
});
console.log(`watchlist ${watchlist.id} created`);

// 2. The receiver: checks X-FLPF-Signature against the endpoint's secret, answers 200.
let secret = "";
let resolveDelivery: (event: { folio: string; score: number; webhookId: string }) => void;
const delivered = new Promise<{ folio: string; score: number; webhookId: string }>((resolve) => {
  resolveDelivery = resolve;
});
const server = createServer(
  nodeHandler({
    secrets: () => [secret],
    dedupe: createMemoryDedupe(),
    async onDelivery({ webhookId, payload }) {
      const { match } = payload as { match: { folio: string; score: number } };
      resolveDelivery({ folio: match.folio, score: match.score, webhookId });
    },
  }),
);
await new Promise<void>((resolve) =>
  server.listen(Number(process.env.RECEIVER_PORT ?? 0), "127.0.0.1", resolve),
);
const url =
  process.env.WEBHOOK_URL ??
  `http://127.0.0.1:${(server.address() as AddressInfo).port}/terminal-house`;

try {
  // 3. The webhook: its signing secret is in this answer only.
  const { data: endpoint } = await client.webhooks.create(watchlist.id, { url });
  secret = endpoint.secret;
  console.log(`webhook ${endpoint.id} -> ${url}`);

  // 4. A manual run evaluates the recipe now; each match is delivered like an ingest's.
  const { data: run } = await client.watchlists.run(watchlist.id);
  console.log(`manual run ${run.id} started`);

  const timeout = new Promise<never>((_, reject) =>
    setTimeout(
      () => reject(new Error(`no delivery within ${timeoutSeconds} s`)),
      timeoutSeconds * 1000,
    ).unref(),
  );
  const event = await Promise.race([delivered, timeout]);
  console.log(
    `delivery ${event.webhookId} verified: ${event.folio} matched with score ${event.score}`,
  );
} finally {
  server.close();
  // Clean up, so running this again starts afresh.
  await client.watchlists.delete(watchlist.id);
}
