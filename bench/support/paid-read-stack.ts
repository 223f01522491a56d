// The stack behind paid lead reads, for benches: keys, parcels and the ledger in this process (they
// answer the gateways' lookups over HTTP), the dev broker in a process of its own (its CPU is read
// apart), a generated roll in the parcel store, and Custom tenants with caps no bench reaches. The
// gateways under test run in processes of their own (gateway-child.ts) with `gatewayEnv`.
// `parcelsProcess` serves the parcel lookups from a process of its own (parcels-child.ts), as in
// production, so that they do not wait behind the ledger's consumer on this process's event loop.
// Redis is a server of the stack's own, so its CPU is the stack's alone.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nalFileName, writeNalFile } from "@th/parcels/generate";
import { startEdgeStack } from "../../test/support/edge-stack.ts";
import { startBrokerProcess } from "./broker-process.ts";
import { sleep, spawnUntilReady, stopChild } from "./processes.ts";
import { startRedisProcess } from "./redis-process.ts";

export async function startPaidReadStack(options: {
  tenants: number;
  rows: number;
  parcelsProcess?: boolean;
}) {
  const broker = await startBrokerProcess(["--in-memory"]);
  const redis = await startRedisProcess();
  const stack = await startEdgeStack({ brokers: [broker.address], redisUrl: redis.url });
  const dir = await mkdtemp(join(tmpdir(), "th-paid-read-"));
  const roll = join(dir, nalFileName(23, "F", 2025));
  await writeNalFile(roll, { rows: options.rows, seed: 20261127, countyNo: 23 });
  const folios = await stack.ingestSample(roll);
  await rm(dir, { recursive: true, force: true });
  const keys: string[] = [];
  for (let i = 0; i < options.tenants; i++) {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, {
      rate_per_minute: 100_000_000,
      lead_views_per_month: 100_000_000,
    });
    keys.push(tenant.key);
  }
  // The limits reach the gateways as tenant.changed; wait until the keys service published them.
  const keysPool = stack.harness.db.poolFor("keys");
  for (;;) {
    const { rows } = await keysPool.query<{ waiting: string }>(
      "SELECT count(*) AS waiting FROM outbox WHERE published_at IS NULL",
    );
    if (Number(rows[0]?.waiting) === 0) {
      break;
    }
    await sleep(50);
  }
  // Only the gateways under test serve the edge; the other services stay to answer over HTTP.
  // The keys service's and matchers' consumers and relays stop so that they do not poll
  // throughout the run; the ledger keeps consuming leadview.recorded, which a quota seed waits for.
  await stack.keys.stop();
  for (const matcher of stack.matchers()) {
    await matcher.stop();
  }
  await stack.gateway.stop();
  const gatewayEnv = stack.gatewayProcessEnv();
  const parcels = options.parcelsProcess
    ? await spawnUntilReady(
        [join(import.meta.dirname, "parcels-child.ts")],
        { DATABASE_URL: stack.harness.db.url, KAFKA_BROKERS: broker.address },
        /^ready \d+$/,
      )
    : undefined;
  if (parcels) {
    gatewayEnv.PARCELS_URL = `http://127.0.0.1:${parcels.line.split(" ")[1]}`;
  }
  return {
    stack,
    keys,
    folios,
    gatewayEnv,
    /** The parcels service's own process, when `parcelsProcess` asked for one. */
    parcelsPid: parcels?.child.pid,
    /** The stack's database, whose counters a run reports: the gateway itself keeps none. */
    database: new URL(stack.harness.db.url).pathname.slice(1),
    brokerPid: broker.pid,
    /** The stack's Redis, a server of the bench's own. */
    redisPid: redis.pid,
    redisUrl: redis.url,
    close: async () => {
      if (parcels) {
        await stopChild(parcels.child);
      }
      await stack.close();
      await broker.stop();
      await redis.stop();
    },
  };
}
