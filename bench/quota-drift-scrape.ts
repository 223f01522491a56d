// What one scrape of the quota ledger's drift gauges costs: every tenant's current-period Redis
// counter compared with the ledger (one SQL query and an MGET per 500 tenants), against the
// per-tenant baseline (a query and a GET each, as a re-seed walks them), on the same data.
//   node bench/quota-drift-scrape.ts [tenants]
import { contracts } from "@th/contracts";
import { createTestHarness } from "@th/service-kit/testing";
import { readConfig } from "../services/quota-ledger/src/config.ts";
import { measureCounterDrift } from "../services/quota-ledger/src/db/counter-drift.ts";
import { migrations } from "../services/quota-ledger/src/db/migrations.ts";

const TENANTS = Number(process.argv[2] ?? 10_000);
const ROUNDS = 5;
const AT = new Date("2026-11-15T12:00:00Z");

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(58)} ${value}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

const harness = await createTestHarness({
  config: readConfig({}),
  migrations: [migrations],
  topics: [contracts.leadViewRecorded],
});
try {
  const pool = harness.db.poolFor("quota_ledger");
  await pool.query(
    `INSERT INTO tenants (tenant_id, revision, tier, status, lead_views_per_month,
       billing_anniversary, changed_at)
     SELECT 'ten_' || i, 1, 'team', 'active', 5000, DATE '2026-11-05', now()
       FROM generate_series(1, $1) AS i`,
    [TENANTS],
  );
  await pool.query(
    `INSERT INTO period_usage (tenant_id, period_start, lead_views)
     SELECT 'ten_' || i, DATE '2026-11-05', i % 4000 FROM generate_series(1, $1) AS i`,
    [TENANTS],
  );
  // One tenant in a hundred drifted by three lead-views.
  const pipeline = harness.redis.pipeline();
  for (let i = 1; i <= TENANTS; i++) {
    pipeline.set(`th:lv:used:ten_${i}:2026-11-05`, String((i % 4000) + (i % 100 === 0 ? 3 : 0)));
  }
  await pipeline.exec();

  const batched: number[] = [];
  let drift = { tenants: 0, leadViews: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    drift = await measureCounterDrift(pool, harness.redis, AT);
    batched.push(performance.now() - started);
  }
  const perTenant: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    let differing = 0;
    for (let i = 1; i <= TENANTS; i++) {
      const [{ rows }, counter] = await Promise.all([
        pool.query<{ lead_views: number }>(
          "SELECT lead_views FROM period_usage WHERE tenant_id = $1 AND period_start = $2",
          [`ten_${i}`, "2026-11-05"],
        ),
        harness.redis.get(`th:lv:used:ten_${i}:2026-11-05`),
      ]);
      if (counter !== null && Number(counter) !== (rows[0]?.lead_views ?? 0)) {
        differing++;
      }
    }
    if (differing !== drift.tenants) {
      throw new Error(
        `the baseline found ${differing} drifted tenants, the gauge ${drift.tenants}`,
      );
    }
    perTenant.push(performance.now() - started);
  }
  report("tenants", String(TENANTS));
  report(
    "drifted tenants found (expected 1 in 100)",
    `${drift.tenants} (${drift.leadViews} lead-views)`,
  );
  report("one scrape, batched (median of 5)", `${median(batched).toFixed(1)} ms`);
  report(
    "baseline: a query and a GET per tenant (median of 5)",
    `${median(perTenant).toFixed(1)} ms`,
  );
  report("baseline / batched", `${(median(perTenant) / median(batched)).toFixed(1)}x`);
} finally {
  await harness.close();
}
