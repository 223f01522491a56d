// The cost of the authenticated edge: an authenticated GET /v1/me through the full gateway
// (bearer parsing, checksum, HMAC, one Redis script for key + tenant + sliding minute, headers)
// against the same handler on a bare Fastify server, in the same process and run.
// Run: node bench/edge-auth.ts [seconds per phase]

import { execFile } from "node:child_process";
import type { AddressInfo } from "node:net";
import { cpus } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Fastify from "fastify";
import { startEdgeStack } from "../test/support/edge-stack.ts";

const seconds = Number(process.argv[2] ?? 8);

interface LoadResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
}

/** The load runs in its own process so it does not share the servers' event loop. */
async function run(
  url: string,
  headers: Record<string, string>,
  options: { connections: number; overallRate?: number },
): Promise<LoadResult> {
  const args = [
    "--json",
    "--duration",
    String(seconds),
    "--connections",
    String(options.connections),
    ...Object.entries(headers).flatMap(([name, value]) => ["--headers", `${name}=${value}`]),
    ...(options.overallRate ? ["--overallRate", String(options.overallRate)] : []),
    url,
  ];
  const bin = join(import.meta.dirname, "node_modules", ".bin", "autocannon");
  const { stdout } = await promisify(execFile)(bin, args, { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as LoadResult;
}

// The rate limit would cut the run short; the bench tenant gets a cap no load here reaches.
const stack = await startEdgeStack();
const tenant = await stack.startTrial("custom");
await stack.harness.db
  .poolFor("keys")
  .query("UPDATE tenants SET rate_per_minute = 100000000, revision = revision + 1 WHERE id = $1", [
    tenant.tenantId,
  ]);
await stack.gateway.store.forgetTenant(tenant.tenantId);
const gateway = stack.gateway.http;
if (!gateway) {
  throw new Error("no gateway app");
}
await gateway.listen({ port: 0, host: "127.0.0.1" });
const gatewayUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}/v1/me`;

const bare = Fastify();
bare.get("/v1/me", async () => ({ tenant_id: "t", member_id: "m", key_id: "k", tier: "custom" }));
await bare.listen({ port: 0, host: "127.0.0.1" });
const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}/v1/me`;

const auth = { authorization: `Bearer ${tenant.key}` };
const check = await fetch(gatewayUrl, { headers: auth });
if (check.status !== 200) {
  throw new Error(`gateway answered ${check.status}: ${await check.text()}`);
}

const bareMax = await run(bareUrl, auth, { connections: 32 });
const edgeMax = await run(gatewayUrl, auth, { connections: 32 });
const halfRate = Math.floor(edgeMax.requests.average / 2);
const edgeHalf = await run(gatewayUrl, auth, { connections: 16, overallRate: halfRate });
const bareHalf = await run(bareUrl, auth, { connections: 16, overallRate: halfRate });

const rows = [
  ["bare Fastify, saturated", bareMax],
  ["full edge, saturated", edgeMax],
  [`bare Fastify at ${halfRate} req/s`, bareHalf],
  [`full edge at ${halfRate} req/s`, edgeHalf],
] as const;
console.info(
  `machine: ${cpus().length} x ${cpus()[0]?.model}, Node ${process.version}, ${seconds} s per phase`,
);
for (const [name, result] of rows) {
  console.info(
    `${name.padEnd(36)} ${result.requests.average.toFixed(0).padStart(7)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  non-2xx ${result.non2xx}`,
  );
}
console.info(
  `edge / bare throughput: ${(edgeMax.requests.average / bareMax.requests.average).toFixed(2)}x (goal >= 0.5x); ` +
    `edge p99 at half of its saturation: ${edgeHalf.latency.p99} ms (goal < 5 ms)`,
);

await bare.close();
await gateway.close();
await stack.close();
