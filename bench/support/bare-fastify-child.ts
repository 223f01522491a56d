// The baseline of bench/edge-auth.ts: the same route on a bare Fastify server, in its own process
// as the gateway is. Prints "ready <port>" once it listens.
import type { AddressInfo } from "node:net";
import Fastify from "fastify";

const bare = Fastify();
bare.get("/v1/me", async () => ({ tenant_id: "t", member_id: "m", key_id: "k", tier: "custom" }));
await bare.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`ready ${(bare.server.address() as AddressInfo).port}\n`);
process.on("SIGTERM", async () => {
  await bare.close();
  process.exit(0);
});
