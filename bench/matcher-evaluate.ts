// In-process matching throughput: 1,000 watchlists across 100 tenants, compiled and indexed,
// against synthetic Florida parcels on one core. The baseline, measured in the same run, is
// the naive loop: evaluateRecipe for every watchlist on every parcel.
// Run from the repository root: node bench/matcher-evaluate.ts [watchlists] [parcels]
import {
  compileRecipe,
  compileVersions,
  evaluateRecipe,
  parcelFacts,
  RecipeIndex,
} from "@th/matcher/domain";
import { judgeParcel } from "@th/matcher/judge";
import { realisticRecipe, rng, syntheticParcel } from "@th/matcher/testing";

const WATCHLISTS = Number(process.argv[2] ?? 1000);
const PARCELS = Number(process.argv[3] ?? 300_000);
const TENANTS = 100;

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(58)} ${value}\n`);
}

const random = rng(20261123);
const watchlists = Array.from({ length: WATCHLISTS }, (_, index) => ({
  id: `wl_${index}`,
  tenantId: `tn_${index % TENANTS}`,
  name: `Watchlist ${index}`,
  recipe: realisticRecipe(random),
}));
const compileStarted = performance.now();
const index = new RecipeIndex(
  watchlists.flatMap((watchlist) =>
    compileVersions({ id: watchlist.id, tenantId: watchlist.tenantId, name: watchlist.name }, [
      { version: 1, recipe: compileRecipe(watchlist.recipe).recipe, effectiveFromMs: 0 },
    ]),
  ),
);
const compileMs = performance.now() - compileStarted;
const parcels = Array.from({ length: PARCELS }, (_, n) =>
  syntheticParcel(random, n, { sparseShare: 0.05 }),
);
const occurredAt = new Date().toISOString();

report("watchlists / tenants", `${WATCHLISTS} / ${TENANTS}`);
report("compile + index all watchlists", `${compileMs.toFixed(1)} ms`);
report("unindexed watchlists (tested on every parcel)", String(index.stats.unindexed));

let candidates = 0;
for (const parcel of parcels.slice(0, 10_000)) {
  index.forEachCandidate(parcelFacts(parcel), () => {
    candidates++;
  });
}
report("candidate versions per parcel (mean)", (candidates / 10_000).toFixed(1));

// Warm up, then measure the real consumer path: parcel facts, index look-up, compiled
// predicates, the score of each match and its match.found record (with its match id).
for (const parcel of parcels.slice(0, 20_000)) {
  judgeParcel(index, parcel, occurredAt);
}
// Three rounds; the best is reported (the machine may be shared with other work).
let matches = 0;
let indexedRate = 0;
let wallRate = 0;
for (let round = 0; round < 3; round++) {
  matches = 0;
  const started = performance.now();
  const cpuStarted = process.cpuUsage();
  for (const parcel of parcels) {
    matches += judgeParcel(index, parcel, occurredAt).length;
  }
  const indexedMs = performance.now() - started;
  // Per core: parcels per second of this process's CPU time.
  indexedRate = Math.max(indexedRate, PARCELS / (cpuMs(process.cpuUsage(cpuStarted)) / 1000));
  wallRate = Math.max(wallRate, PARCELS / (indexedMs / 1000));
}
report(
  "indexed: parcels/s per core (CPU time, best of 3)",
  Math.round(indexedRate).toLocaleString("en-US"),
);
report("indexed: parcels/s (wall clock, best of 3)", Math.round(wallRate).toLocaleString("en-US"));
report("indexed: matches per parcel", (matches / PARCELS).toFixed(3));

// Baseline: every watchlist, every parcel, with evaluateRecipe (on a sample: it is slow).
const compiled = watchlists.map((watchlist) => compileRecipe(watchlist.recipe));
const sample = parcels.slice(0, Math.max(200, Math.min(2000, Math.round(PARCELS / 200))));
let naiveMatches = 0;
const naiveCpu = process.cpuUsage();
for (const parcel of sample) {
  for (const recipe of compiled) {
    if (evaluateRecipe(recipe, parcel).matched) {
      naiveMatches++;
    }
  }
}
const naiveRate = sample.length / (cpuMs(process.cpuUsage(naiveCpu)) / 1000);
let sampleIndexed = 0;
for (const parcel of sample) {
  sampleIndexed += judgeParcel(index, parcel, occurredAt).length;
}
report(
  `naive evaluate-every-watchlist: parcels/s per core (${sample.length})`,
  Math.round(naiveRate).toLocaleString("en-US"),
);
report("same matches on the sample (naive = indexed)", `${naiveMatches} = ${sampleIndexed}`);
report("speed-up, indexed over naive", `${(indexedRate / naiveRate).toFixed(0)}x`);
report("target >= 100,000 parcels/s per core", indexedRate >= 100_000 ? "met" : "NOT met");
if (naiveMatches !== sampleIndexed) {
  process.exitCode = 1;
}
