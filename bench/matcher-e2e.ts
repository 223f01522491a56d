// End-to-end matching throughput: parcel.ingested published to the dev broker -> matcher
// consumers (two processes sharing the partitions, one core each) -> matches and outbox rows
// in Postgres -> match.found on the broker. 1,000 watchlists across 100 tenants.
// Baseline in the same run: a consumer group of the same two processes that only decodes the
// records, in batches as the matcher does (the bus and the broker alone), so the ratio is what
// matching itself costs; the one-record-at-a-time consumer (`on`) is shown for reference.
// Run from the repository root: node bench/matcher-e2e.ts [parcels]
// BENCH_CPU_PROF=<dir> writes a CPU profile of each matcher process there; BENCH_WORKER_FLAGS
// passes node flags to every worker instead of the matcher's shipped ones.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Bus, on, onBatch } from "@th/bus";
import { contracts, type ParcelIngested } from "@th/contracts";
import { createPool } from "@th/db";
import { createTestDatabase } from "@th/db/testing";
import { buildApp } from "@th/matcher/app";
import { readConfig } from "@th/matcher/config";
import { compileRecipe, compileVersions, RecipeIndex } from "@th/matcher/domain";
import { judgeParcel } from "@th/matcher/judge";
import { migrations } from "@th/matcher/migrations";
import { realisticRecipe, rng, syntheticParcel } from "@th/matcher/testing";
import { createWatchlistStore } from "@th/matcher/watchlists";
import { createLogger } from "@th/telemetry";
import { cpuMsOf, postgresCpuMsOf, postgresCpuMsSince } from "./support/cpu.ts";

const SELF = fileURLToPath(import.meta.url);
/** The young-generation size deploy/helm gives the matcher (values.yaml, NODE_OPTIONS). */
const SHIPPED_MATCHER_FLAGS = "--max-semi-space-size=64";
const CLI = fileURLToPath(new URL("../packages/dev-broker/src/cli.ts", import.meta.url));
const logger = createLogger({ service: "bench", level: "fatal" });

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(58)} ${value}\n`);
}

/** A worker process: one matcher (or a decode-only consumer), until killed. */
async function worker(mode: string, brokers: string, databaseUrl: string): Promise<void> {
  const bus = new Bus({ brokers: [brokers], clientId: `bench-${mode}`, logger });
  let handled = () => 0;
  if (mode === "decode") {
    let count = 0;
    handled = () => count;
    await bus.consume({
      group: "bench.decode",
      partitionsConsumedConcurrently: 12,
      subscriptions: [
        onBatch(contracts.parcelIngested, async (records) => {
          count += records.length;
          return undefined;
        }),
      ],
    });
  } else if (mode === "decode-each") {
    let count = 0;
    handled = () => count;
    await bus.consume({
      group: "bench.decode-each",
      partitionsConsumedConcurrently: 12,
      subscriptions: [
        on(contracts.parcelIngested, async () => {
          count++;
          return undefined;
        }),
      ],
    });
  } else {
    const config = {
      ...readConfig({}),
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: [brokers],
      WATCHLIST_POLL_MS: 1000,
    };
    const pool = createPool({ url: databaseUrl, schema: "matcher", max: 8 });
    // The matcher never touches Redis.
    const redis = undefined as never;
    const app = await buildApp({ config, logger, pool, redis, bus }, { projection: false });
    await app.start();
    handled = () => app.counters().parcels;
  }
  let cpuAtFirst: NodeJS.CpuUsage | undefined;
  // A clean exit, so a CPU profile (BENCH_CPU_PROF) gets written; first the CPU time this
  // process spent since its first record.
  process.once("SIGTERM", () => {
    const used = cpuAtFirst ? process.cpuUsage(cpuAtFirst) : { user: 0, system: 0 };
    process.stdout.write(`cpu ${(used.user + used.system) / 1000}\n`);
    process.exit(0);
  });
  process.stdout.write("ready\n");
  // The instant this process handled its first record, on the shared clock.
  const timer = setInterval(() => {
    if (handled() > 0) {
      cpuAtFirst = process.cpuUsage();
      process.stdout.write(`first ${Date.now()}\n`);
      clearInterval(timer);
    }
  }, 1);
}

const firstHandled: number[] = [];
const workerCpuMs: number[] = [];

function spawnChild(args: string[], ready: RegExp): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      const first = /^first (\d+)$/.exec(line);
      if (first) {
        firstHandled.push(Number(first[1]));
      }
      const cpu = /^cpu ([\d.]+)$/.exec(line);
      if (cpu) {
        workerCpuMs.push(Number(cpu[1]));
      }
      if (ready.test(line)) {
        resolve({ child, line });
      }
    });
    child.once("exit", (code) => reject(new Error(`child exited with ${code}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) {
      resolve();
      return;
    }
    const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

async function sumOffsets(offsets: Map<number, string>): Promise<bigint> {
  let total = 0n;
  for (const offset of offsets.values()) {
    total += BigInt(offset) > 0n ? BigInt(offset) : 0n;
  }
  return total;
}

async function main(): Promise<void> {
  const PARCELS = Number(process.argv[2] ?? 200_000);
  const broker = await spawnChild(
    [CLI, "--port", "0", "--log-level", "error", "--in-memory"],
    /ready on (\S+)/,
  );
  const brokers = /ready on (\S+)/.exec(broker.line)?.[1] as string;
  const db = await createTestDatabase([migrations]);
  const bus = new Bus({ brokers: [brokers], clientId: "bench", logger });
  await bus.provision([contracts.parcelIngested, contracts.matchFound]);
  try {
    // 1,000 watchlists across 100 tenants, through the same store the API uses.
    const random = rng(20261123);
    const store = createWatchlistStore(db.poolFor("matcher"), { maxPerTenant: 1000 });
    const recipes = Array.from({ length: 1000 }, () => realisticRecipe(random));
    for (const [index, recipe] of recipes.entries()) {
      await store.create({ tenantId: `tn_${index % 100}`, name: `Watchlist ${index}`, recipe });
    }
    const observedAt = new Date(Date.now() + 1000).toISOString();
    const parcels: ParcelIngested[] = Array.from({ length: PARCELS }, (_, n) =>
      syntheticParcel(random, n, { observedAt, ingestId: "ing_bench" }),
    );
    // The matches to expect, from the same recipes in process.
    const index = new RecipeIndex(
      recipes.flatMap((recipe, at) =>
        compileVersions({ id: `wl_${at}`, tenantId: "t", name: "n" }, [
          { version: 1, recipe: compileRecipe(recipe).recipe, effectiveFromMs: 0 },
        ]),
      ),
    );
    const expectedMatches = parcels.reduce(
      (sum, parcel) => sum + judgeParcel(index, parcel, observedAt).length,
      0,
    );
    report("parcels / watchlists / tenants", `${PARCELS} / 1000 / 100`);
    report(
      "expected matches",
      `${expectedMatches} (${(expectedMatches / PARCELS).toFixed(3)} per parcel)`,
    );

    // The ingest: every parcel published first (its own figure), so the matcher's rate is not
    // capped by one publishing process on a shared machine.
    const publishStarted = performance.now();
    for (let at = 0; at < parcels.length; at += 5000) {
      await bus.publish(contracts.parcelIngested, parcels.slice(at, at + 5000));
    }
    const publishMs = performance.now() - publishStarted;
    report(
      "ingest: publish parcel.ingested, parcels/s",
      Math.round(PARCELS / (publishMs / 1000)).toLocaleString("en-US"),
    );
    const target = await sumOffsets(await bus.highWaterMarks("parcel.ingested"));

    /**
     * Starts two worker processes in one group and measures from the first record either of
     * them handled (group joins are left out) until the group committed every record and
     * every expected match.found is on the broker.
     */
    async function run(mode: string, group: string): Promise<number> {
      firstHandled.length = 0;
      workerCpuMs.length = 0;
      const brokerCpuBefore = cpuMsOf(broker.child.pid);
      const database = new URL(db.url).pathname.slice(1);
      const postgresBefore = postgresCpuMsOf(database);
      const profile = process.env.BENCH_CPU_PROF;
      const flags = profile && mode === "match" ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : [];
      // Every worker runs with the V8 settings the chart ships for the matcher, unless
      // BENCH_WORKER_FLAGS names others ("" for node's defaults).
      flags.push(
        ...(process.env.BENCH_WORKER_FLAGS ?? SHIPPED_MATCHER_FLAGS).split(" ").filter(Boolean),
      );
      const workers = await Promise.all(
        [0, 1].map(() => spawnChild([...flags, SELF, "worker", mode, brokers, db.url], /^ready$/)),
      );
      let lastLog = Date.now();
      for (;;) {
        const committed = await sumOffsets(await bus.committedOffsets(group, "parcel.ingested"));
        const found =
          mode === "match" ? await sumOffsets(await bus.highWaterMarks("match.found")) : 0n;
        if (committed >= target && found >= (mode === "match" ? BigInt(expectedMatches) : 0n)) {
          break;
        }
        if (Date.now() - lastLog > 5000) {
          lastLog = Date.now();
          process.stderr.write(
            `  ${mode}: consumed ${committed}/${target}, match.found ${found}\n`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const elapsed = Date.now() - Math.min(...firstHandled);
      const brokerCpu = cpuMsOf(broker.child.pid) - brokerCpuBefore;
      const postgresCpu = postgresCpuMsSince(database, postgresBefore);
      await Promise.all(workers.map((each) => stop(each.child)));
      // CPU time is steadier than wall-clock time on a shared machine: it says what each part
      // costs, whatever else ran meanwhile.
      const perThousand = (ms: number) => (ms / (PARCELS / 1000)).toFixed(1);
      const workersCpu = workerCpuMs.reduce((sum, ms) => sum + ms, 0);
      report(
        `  ${mode}: CPU ms per 1,000 parcels (workers / broker / db)`,
        `${perThousand(workersCpu)} / ${perThousand(brokerCpu)} / ${perThousand(postgresCpu)}`,
      );
      return PARCELS / (elapsed / 1000);
    }

    const eachRate = await run("decode-each", "bench.decode-each");
    report(
      "bus consume + decode only, one record at a time: parcels/s",
      Math.round(eachRate).toLocaleString("en-US"),
    );
    const decodeRate = await run("decode", "bench.decode");
    report(
      "baseline (bus consume + decode only, batches): parcels/s",
      Math.round(decodeRate).toLocaleString("en-US"),
    );
    const matchRate = await run("match", "matcher.match");
    report(
      "ingest -> match.found, 2 matcher processes: parcels/s",
      Math.round(matchRate).toLocaleString("en-US"),
    );
    const { rows } = await db
      .poolFor("matcher")
      .query<{ count: string }>("SELECT count(*) FROM matches");
    report("match rows / match.found expected", `${rows[0]?.count} / ${expectedMatches}`);
    report("matching throughput / decode-only baseline", `${(matchRate / decodeRate).toFixed(2)}`);
    report("target >= 30,000 parcels/s on 2 cores", matchRate >= 30_000 ? "met" : "NOT met");
  } finally {
    await bus.close();
    await db.drop();
    await stop(broker.child);
  }
}

if (process.argv[2] === "worker") {
  await worker(process.argv[3] as string, process.argv[4] as string, process.argv[5] as string);
} else {
  await main();
  process.exit(0);
}
