// The matcher's scale-out work: parcel.ingested published here, matched by the instances against
// 1,000 watchlists of 100 tenants, until every expected match.found is on the broker and the
// group has committed every record. Each round ingests parcels of its own, so every round's
// matches are new. The backlog is on the broker before the clock starts. With `--one-busy` every
// round's parcels go to one instance's partitions.
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Bus, partitionOfKey } from "@th/bus";
import { contracts, type ParcelIngested } from "@th/contracts";
import { createTestDatabase } from "@th/db/testing";
import { compileRecipe, compileVersions, RecipeIndex } from "@th/matcher/domain";
import { judgeParcel } from "@th/matcher/judge";
import { migrations } from "@th/matcher/migrations";
import { realisticRecipe, rng, syntheticParcel } from "@th/matcher/testing";
import { createWatchlistStore } from "@th/matcher/watchlists";
import { createLogger } from "@th/telemetry";
import { startBrokerProcess } from "./broker-process.ts";
import { sleep, spawnUntilReady } from "./processes.ts";
import type { ScaleDriver, ScaleOptions } from "./scale-driver.ts";

const CHILD = fileURLToPath(new URL("../../test/support/matcher-child.ts", import.meta.url));
const GROUP = "matcher.match";

function signalAll(instances: readonly ChildProcess[], signal: NodeJS.Signals): void {
  for (const child of instances) {
    child.kill(signal);
  }
}

function sum(offsets: Map<number, string>): bigint {
  let total = 0n;
  for (const offset of offsets.values()) {
    total += BigInt(offset) > 0n ? BigInt(offset) : 0n;
  }
  return total;
}

export async function matcherDriver(options: ScaleOptions): Promise<ScaleDriver> {
  const perRound = options.work ?? 20_000;
  const logger = createLogger({ service: "bench", level: "fatal" });
  const broker = await startBrokerProcess(["--in-memory"]);
  const db = await createTestDatabase([migrations]);
  const bus = new Bus({ brokers: [broker.address], clientId: "bench", logger });
  await bus.provision([contracts.parcelIngested, contracts.matchFound]);
  const random = rng(20261127);
  const store = createWatchlistStore(db.poolFor("matcher"), { maxPerTenant: 1000 });
  const recipes = Array.from({ length: 1000 }, () => realisticRecipe(random));
  for (const [at, recipe] of recipes.entries()) {
    await store.create({ tenantId: `tn_${at % 100}`, name: `Watchlist ${at}`, recipe });
  }
  const index = new RecipeIndex(
    recipes.flatMap((recipe, at) =>
      compileVersions({ id: `wl_${at}`, tenantId: "t", name: "n" }, [
        { version: 1, recipe: compileRecipe(recipe).recipe, effectiveFromMs: 0 },
      ]),
    ),
  );
  let rounds = 0;

  /**
   * A round's parcels. With `busyOneOf` instances only parcels keyed to partitions p with
   * p % busyOneOf === 0: the group's round-robin assignment gives instance i the partitions
   * i, i + N, ..., so they are all one instance's.
   */
  function roundParcels(first: number, observedAt: string, busyOneOf: number): ParcelIngested[] {
    const parcels: ParcelIngested[] = [];
    for (let n = first * busyOneOf; parcels.length < perRound; n++) {
      const parcel = syntheticParcel(random, n, { observedAt, ingestId: `ing_scale_${rounds}` });
      if (partitionOfKey(parcel.folio, contracts.parcelIngested.partitions) % busyOneOf === 0) {
        parcels.push(parcel);
      }
    }
    return parcels;
  }

  return {
    unit: "parcels",
    database: new URL(db.url).pathname.slice(1),
    shared: () => ({ broker: broker.pid === undefined ? [] : [broker.pid] }),
    startInstance: async () =>
      (
        await spawnUntilReady(
          [CHILD],
          {
            DATABASE_URL: db.url,
            KAFKA_BROKERS: broker.address,
            WATCHLIST_POLL_MS: "1000",
            LOG_LEVEL: "fatal",
            // As the chart runs the matcher (deploy/helm/terminal-house/values.yaml).
            NODE_OPTIONS: "--max-old-space-size=640 --max-semi-space-size=64",
          },
          /^ready$/,
        )
      ).child,
    async settle(_instances: readonly ChildProcess[]) {
      // Every instance joined and took its partitions before the clock starts.
      await sleep(4_000);
    },
    async round(instances) {
      const observedAt = new Date(Date.now() + 1000).toISOString();
      const first = rounds++ * perRound;
      const parcels = roundParcels(first, observedAt, options.oneBusy ? instances.length : 1);
      const expected = parcels.reduce(
        (total, parcel) => total + judgeParcel(index, parcel, observedAt).length,
        0,
      );
      const matchesBefore = sum(await bus.highWaterMarks("match.found"));
      // The instances are stopped while the backlog is published: publishing competes with them
      // for the free core and would bound the round by this process, not by the matcher. A few
      // seconds frozen is well inside the group's session timeout, so nobody leaves the group.
      signalAll(instances, "SIGSTOP");
      try {
        for (let at = 0; at < parcels.length; at += 5000) {
          await bus.publish(contracts.parcelIngested, parcels.slice(at, at + 5000));
        }
      } finally {
        signalAll(instances, "SIGCONT");
      }
      const started = performance.now();
      const target = sum(await bus.highWaterMarks("parcel.ingested"));
      const deadline = Date.now() + 600_000;
      let found = 0n;
      let judgedAfter: number | undefined;
      for (;;) {
        const committed = sum(await bus.committedOffsets(GROUP, "parcel.ingested"));
        found = sum(await bus.highWaterMarks("match.found")) - matchesBefore;
        if (committed >= target && judgedAfter === undefined) {
          judgedAfter = (performance.now() - started) / 1000;
        }
        if ((committed >= target && found >= BigInt(expected)) || Date.now() > deadline) {
          break;
        }
        await sleep(20);
      }
      return {
        completed: perRound,
        seconds: (performance.now() - started) / 1000,
        notes: [
          ["match.found produced / expected", `${found} / ${expected}`],
          // Judged and committed before every match.found is out means the relay is what lags.
          ["every parcel judged after", `${judgedAfter?.toFixed(1) ?? "-"} s`],
        ],
      };
    },
    async close() {
      await bus.close();
      await db.drop();
      await broker.stop();
    },
  };
}
