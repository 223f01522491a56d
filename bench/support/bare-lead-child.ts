// The baseline of bench/paid-read.ts: a bare Fastify server answering the lead routes with the same
// bodies the gateway gave, from memory (files named by BARE_LEAD_FILE and BARE_BATCH_FILE). In its
// own process, as the gateway is. Prints "ready <port>" once it listens.
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import Fastify from "fastify";

const lead = JSON.parse(readFileSync(process.env.BARE_LEAD_FILE ?? "", "utf8")) as unknown;
const batch = JSON.parse(readFileSync(process.env.BARE_BATCH_FILE ?? "", "utf8")) as unknown;
const bare = Fastify();
bare.get("/v1/leads/:folio", async () => lead);
bare.post("/v1/leads/batch", async () => batch);
await bare.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`ready ${(bare.server.address() as AddressInfo).port}\n`);
process.on("SIGTERM", async () => {
  await bare.close();
  process.exit(0);
});
