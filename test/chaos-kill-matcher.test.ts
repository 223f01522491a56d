// kill -9 of the matcher in the middle of an ingest, then a new matcher process: every match is
// produced, and once per watchlist and parcel by id (a parcel judged again after the kill yields
// its match under the same id, never a second one).
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { contracts } from "@th/contracts";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { compileRecipe, compileVersions, RecipeIndex } from "@th/matcher/domain";
import { judgeParcel } from "@th/matcher/judge";
import { migrations as matcherMigrations } from "@th/matcher/migrations";
import { realisticRecipe, rng, syntheticParcel, syntheticRecipe } from "@th/matcher/testing";
import { createWatchlistStore } from "@th/matcher/watchlists";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryCounts, recordFault } from "./support/chaos-report.ts";
import { startWebhookStack, type WebhookStack, waitFor } from "./support/webhook-stack.ts";

let stack: WebhookStack;
let db: TestDatabase;
const children: ChildProcess[] = [];

beforeAll(async () => {
  stack = await startWebhookStack();
  await stack.harness.bus.provision([contracts.parcelIngested]);
  db = await createTestDatabase([matcherMigrations]);
});

afterAll(async () => {
  for (const child of children) {
    child.kill("SIGKILL");
  }
  await db?.drop();
  await stack?.close();
});

function spawnMatcher(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, "support", "matcher-child.ts")],
    {
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        KAFKA_BROKERS: stack.harness.brokers.join(","),
        WATCHLIST_POLL_MS: "1000",
        LOG_LEVEL: "fatal",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) {
        resolve(child);
      }
    });
    child.once("exit", (code, signal) => reject(new Error(`matcher exited (${code ?? signal})`)));
  });
}

async function matchesPublished(): Promise<bigint> {
  const marks = await stack.harness.bus.highWaterMarks(contracts.matchFound.topic);
  return [...marks.values()].reduce((sum, mark) => sum + BigInt(mark), 0n);
}

describe("kill -9 of the matcher mid-ingest", () => {
  it("yields every match once per watchlist and parcel, by id, after a new matcher takes over", async () => {
    const random = rng(20261128);
    const store = createWatchlistStore(db.poolFor("matcher"), { maxPerTenant: 100 });
    const recipes = Array.from({ length: 40 }, (_, at) =>
      at % 3 === 0 ? syntheticRecipe(random, { broad: true }) : realisticRecipe(random),
    );
    const created: Array<{ id: string }> = [];
    for (const [at, recipe] of recipes.entries()) {
      created.push(
        await store.create({ tenantId: `tn_k${at % 4}`, name: `Watchlist ${at}`, recipe }),
      );
    }
    const index = new RecipeIndex(
      recipes.flatMap((recipe, at) =>
        compileVersions({ id: created[at]?.id ?? "", tenantId: "t", name: "n" }, [
          { version: 1, recipe: compileRecipe(recipe).recipe, effectiveFromMs: 0 },
        ]),
      ),
    );
    const victim = await spawnMatcher();
    const observedAt = new Date(Date.now() + 1000).toISOString();
    const expected = new Set<string>();
    const waves = 8;
    const perWave = 400;
    let recoveryMs: number | null = null;
    /** A wave of parcels published, the matches the judge finds in it expected. */
    const publishWave = async (wave: number) => {
      const parcels = Array.from({ length: perWave }, (_, n) =>
        syntheticParcel(random, wave * perWave + n, { observedAt, ingestId: "ing_kill" }),
      );
      for (const parcel of parcels) {
        for (const hit of judgeParcel(index, parcel, observedAt)) {
          expected.add(`${hit.event.watchlist.id} ${parcel.folio}`);
        }
      }
      await stack.harness.bus.publish(contracts.parcelIngested, parcels);
    };
    for (let wave = 0; wave < waves; wave++) {
      if (wave === 3) {
        // Mid-ingest: parcels it had fetched and not committed come again to the next matcher.
        victim.kill("SIGKILL");
        await new Promise((resolve) => victim.once("exit", resolve));
        // Restarted at once: recovery runs from the kill to the new matcher's first match.
        const killedAt = Date.now();
        const before = await matchesPublished();
        await spawnMatcher();
        await publishWave(wave);
        await waitFor(async () => (await matchesPublished()) > before, {
          timeoutMs: 30_000,
          intervalMs: 100,
          what: "a match from the new matcher",
        });
        recoveryMs = Date.now() - killedAt;
        continue;
      }
      await publishWave(wave);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(expected.size).toBeGreaterThan(100);
    expect(recoveryMs).toBeLessThan(30_000);

    const idsByPair = new Map<string, Set<string>>();
    let records = 0;
    await waitFor(
      async () => {
        idsByPair.clear();
        records = 0;
        await stack.harness.bus.replay(contracts.matchFound, {
          onBatch: async (batch) => {
            records += batch.length;
            for (const { value } of batch) {
              const pair = `${value.watchlist.id} ${value.match.folio}`;
              idsByPair.set(pair, (idsByPair.get(pair) ?? new Set()).add(value.match_id));
            }
          },
        });
        return idsByPair.size >= expected.size;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: "every expected match on match.found" },
    );
    expect(new Set(idsByPair.keys())).toEqual(expected);
    const twoIds = [...idsByPair.values()].filter((ids) => ids.size !== 1);
    expect(twoIds).toEqual([]);
    recordFault({
      fault: "kill -9 of the matcher mid-ingest",
      ...deliveryCounts(expected.size, {
        received: idsByPair.size,
        duplicates: records - idsByPair.size,
        lost: [...expected].filter((pair) => !idsByPair.has(pair)).length,
      }),
      recoveryMs,
    });
  }, 180_000);
});
