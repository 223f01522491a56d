// The parcels service in its own process, as it runs in production: the read path's parcel
// lookups get an event loop of their own instead of sharing the bench's with the keys service
// and the ledger's consumer. Shares the parent's database and broker; everything comes from the
// environment. Prints "ready <port>" once it listens.
import type { AddressInfo } from "node:net";
import { Bus } from "@th/bus";
import { kafkaConnection } from "@th/config";
import { createPool } from "@th/db";
import { buildApp } from "@th/parcels/app";
import { readConfig } from "@th/parcels/config";
import { createLogger } from "@th/telemetry";
import { Redis } from "ioredis";

const config = readConfig(process.env);
const logger = createLogger({ service: "parcels-child", level: "fatal" });
const pool = createPool({
  url: config.DATABASE_URL,
  schema: "parcels",
  applicationName: `parcels-child-${process.pid}`,
});
// The service keeps nothing in Redis; the connection is the one every service is handed.
const redis = new Redis(config.REDIS_URL, { lazyConnect: true });
const bus = new Bus({
  ...kafkaConnection(config),
  clientId: `parcels-child-${process.pid}`,
  logger,
});
const app = await buildApp({ config, logger, pool, redis, bus });
const http = app.http;
if (!http) {
  throw new Error("the parcels service has no HTTP app");
}
await http.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`ready ${(http.server.address() as AddressInfo).port}\n`);
process.on("SIGTERM", async () => {
  await http.close();
  await bus.close();
  await pool.end();
  redis.disconnect();
  process.exit(0);
});
