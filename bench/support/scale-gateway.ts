// The gateway's scale-out work: paid lead reads (key, rate limit, lead-view reservation, parcel
// lookup, leadview.recorded) from a closed-loop client in a process of its own, spread over the
// instances. The parcels and keys services run in this process and answer the instances' cache
// misses and lookups; their CPU is this process's. The broker runs in a process of its own.
import { type ChildProcess, execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { GATEWAY_NODE_FLAGS } from "@th/gateway/heap";
import { startPaidReadStack } from "./paid-read-stack.ts";
import { pidsOf, spawnUntilReady } from "./processes.ts";
import type { ScaleDriver, ScaleOptions } from "./scale-driver.ts";

const TENANTS = 6;
const CONNECTIONS_PER_INSTANCE = 8;
const WARM_UP_SECONDS = 10;

interface LoadResult {
  completed: number;
  seconds: number;
  non2xx: number;
  statuses: Record<string, number>;
  p50: number;
  p99: number;
  cpuMs: number;
}

export async function gatewayDriver(options: ScaleOptions): Promise<ScaleDriver> {
  const seconds = options.work ?? 10;
  const { keys, folios, gatewayEnv, database, brokerPid, close } = await startPaidReadStack({
    tenants: TENANTS,
    rows: 5_000,
  });
  const urls = new Map<ChildProcess, string>();
  const dir = await mkdtemp(join(tmpdir(), "th-scale-gateway-"));

  async function readLoad(instances: readonly ChildProcess[], forSeconds: number) {
    const plan = join(dir, "plan.json");
    await writeFile(
      plan,
      JSON.stringify({
        urls: instances.map((instance) => urls.get(instance)),
        keys,
        folios,
        seconds: forSeconds,
        connections: CONNECTIONS_PER_INSTANCE * instances.length,
        batch: 0,
      }),
    );
    const { stdout } = await promisify(execFile)(process.execPath, [
      join(import.meta.dirname, "read-load.ts"),
      plan,
    ]);
    return JSON.parse(stdout) as LoadResult;
  }

  return {
    unit: "reads",
    timedRounds: true,
    database,
    shared: () => ({
      redis: pidsOf("redis-server"),
      broker: brokerPid === undefined ? [] : [brokerPid],
    }),
    async startInstance() {
      const started = await spawnUntilReady(
        [...GATEWAY_NODE_FLAGS, join(import.meta.dirname, "gateway-child.ts")],
        gatewayEnv,
        /^ready \d+$/,
      );
      urls.set(started.child, `http://127.0.0.1:${started.line.split(" ")[1]}`);
      return started.child;
    },
    async settle(instances) {
      for (const instance of instances) {
        for (const key of keys) {
          const response = await fetch(`${urls.get(instance)}/v1/me`, {
            headers: { authorization: `Bearer ${key}` },
          });
          if (response.status !== 200) {
            throw new Error(`an instance answered ${response.status}: ${await response.text()}`);
          }
        }
      }
      // A fresh process under a small quota takes many seconds to compile its hot paths; they
      // are not what is measured.
      await readLoad(instances, WARM_UP_SECONDS);
    },
    async round(instances) {
      const load = await readLoad(instances, seconds);
      return {
        completed: load.completed - load.non2xx,
        seconds: load.seconds,
        notes: [
          ["answers by status", JSON.stringify(load.statuses)],
          ["latency p50 / p99, ms", `${load.p50.toFixed(1)} / ${load.p99.toFixed(1)}`],
          ["load client CPU", `${(load.cpuMs / 1000 / load.seconds).toFixed(2)} cores`],
        ],
      };
    },
    async close() {
      await rm(dir, { recursive: true, force: true });
      await close();
    },
  };
}
