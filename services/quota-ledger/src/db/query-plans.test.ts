// The ledger's statements keep their plans on the partitioned lead_views (decision 0393): the
// live path (recording, voiding, the meter's seed, usage, retention's measure) never reads a large
// partition whole, the rebuild, which compares whole months, never reads one again per row, and
// retention's sweep of the first partition (the table as it was) never reads it whole, whether
// any of its rows has expired or none has.
// Plans are the ones Postgres chose as the statements ran (auto_explain, in EXPLAIN (FORMAT
// JSON) form), nested statements of record_lead_views included, with custom and generic plans.
import type { LeadViewRecorded, LeadViewVoided } from "@th/contracts";
import { createPool, type Pool } from "@th/db";
import { listPartitions } from "@th/service-kit";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { monthStart } from "../domain/retention.ts";
import { leadView } from "../testing/fixtures.ts";
import { createLedger } from "./ledger.ts";
import { migrations } from "./migrations.ts";
import { ensureLeadViewMonths } from "./partitions.ts";
import { leadViewsRule } from "./retention.ts";
import { createShadowLedger } from "./shadow-ledger.ts";

/** A partition read whole costs more than an index lookup from this many rows on. */
const LARGE = 10_000;
const TENANTS = 200;
const CLOCK = new Date("2031-05-15T12:00:00Z");

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Parent Relationship"?: string;
  Plans?: PlanNode[];
}
interface CapturedPlan {
  "Query Text": string;
  Plan: PlanNode;
}
interface SeqScan {
  relation: string;
  /** Read again for each row of another input (a nested loop's inner side, a SubPlan). */
  repeated: boolean;
  query: string;
}

/** Every sequential scan of a large partition in a plan. */
function seqScansOfLarge(
  node: PlanNode,
  large: ReadonlySet<string>,
  query: string,
  repeated = false,
): SeqScan[] {
  const relation = node["Relation Name"];
  const here =
    node["Node Type"] === "Seq Scan" && relation && large.has(relation)
      ? [{ relation, repeated, query }]
      : [];
  return here.concat(
    (node.Plans ?? []).flatMap((child) =>
      seqScansOfLarge(
        child,
        large,
        query,
        repeated ||
          child["Parent Relationship"] === "SubPlan" ||
          (node["Node Type"] === "Nested Loop" && child["Parent Relationship"] === "Inner"),
      ),
    ),
  );
}

let harness: TestHarness<Config>;
let large: Set<string>;
const tenants = Array.from({ length: TENANTS }, (_, i) => `ten_plan_${String(i).padStart(3, "0")}`);

/**
 * A pool of one connection whose every statement's plan, nested ones too, comes back as a notice.
 * The connection is set up once and then kept (one connection, never idle for long).
 */
async function explainingPool(planCacheMode: "auto" | "force_generic_plan") {
  const plans: CapturedPlan[] = [];
  const pool = createPool({ url: harness.config.DATABASE_URL, schema: "quota_ledger", max: 1 });
  const client = await pool.connect();
  client.on("notice", (notice) => {
    const json = /plan:\s*(\{[\s\S]*\})\s*$/.exec(notice.message ?? "")?.[1];
    if (json) {
      plans.push(JSON.parse(json) as CapturedPlan);
    }
  });
  await client.query(
    `LOAD 'auto_explain';
     SET auto_explain.log_min_duration = 0;
     SET auto_explain.log_nested_statements = on;
     SET auto_explain.log_format = json;
     SET auto_explain.log_level = notice;
     SET plan_cache_mode = ${planCacheMode};`,
  );
  client.release();
  plans.length = 0;
  return { pool, plans };
}

/** Two months of 100,000 lead-views each over 200 tenants, analysed as autovacuum would. */
async function fillLedger(pool: Pool): Promise<void> {
  await ensureLeadViewMonths(pool, new Date("2031-04-01T00:00:00Z"));
  await pool.query(
    `INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
                             recorded_at, source_partition, source_offset)
     SELECT t.tenant_id, d.day, 'F' || t.n || '_' || d.day || '_' || f, 
            CASE WHEN extract(day FROM d.day) >= 10 THEN date_trunc('month', d.day)::date + 9
                 ELSE (date_trunc('month', d.day) - interval '1 month')::date + 9 END,
            'rest', 'req_' || t.n || '_' || d.day || '_' || f, d.day + time '09:00',
            t.n % 12, row_number() OVER ()
       FROM unnest($1::text[]) WITH ORDINALITY AS t(tenant_id, n)
      CROSS JOIN generate_series(date '2031-04-01', date '2031-05-15', interval '1 day') AS d(day)
      CROSS JOIN generate_series(1, 22) AS f`,
    [tenants],
  );
  await pool.query(
    `INSERT INTO period_usage (tenant_id, period_start, lead_views)
     SELECT tenant_id, billing_period_start, count(*) FROM lead_views GROUP BY 1, 2`,
  );
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'lead_views'::regclass`,
  );
  for (const { name } of rows) {
    await pool.query(`ANALYZE ${name}`);
  }
  const analysed = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'lead_views'::regclass AND c.reltuples > $1`,
    [LARGE],
  );
  large = new Set(analysed.rows.map((row) => row.name));
}

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
  await fillLedger(harness.pool);
}, 120_000);
afterAll(async () => {
  await harness.close();
});

let offset = 1_000_000;
function views(tenant: string, requestId: string, folios: string[]) {
  return folios.map((folio) => ({
    view: {
      ...leadView(tenant, folio, "2031-05-15T11:00:00.000Z", "2031-05-10"),
      request_id: requestId,
    } satisfies LeadViewRecorded,
    position: { partition: 3, offset: String(offset++) },
  }));
}

/** The live path, as often as it takes plpgsql to settle on its plans (five calls). */
async function runLivePath(pool: Pool): Promise<void> {
  const ledger = createLedger(pool);
  for (let round = 0; round < 7; round++) {
    const tenant = tenants[round * 7] as string;
    const folios = Array.from({ length: 20 }, (_, i) => `N${round}_${i}`);
    await ledger.recordBatch(views(tenant, `req_a${round}`, folios));
    // The same views from a second read: runners-up, looked up one key at a time.
    await ledger.recordBatch(views(tenant, `req_b${round}`, folios.slice(0, 5)));
    const voided: LeadViewVoided = {
      tenant_id: tenant,
      request_id: `req_a${round}`,
      day: "2031-05-15",
      folios: folios.slice(0, 3),
      reason: "publish_timeout",
      voided_at: "2031-05-15T11:00:02.000Z",
    };
    await ledger.voidBatch([voided]);
    await ledger.seedFigures(tenant, "2031-05-10", "2031-05-15");
    await ledger.periodUsage(tenant, "2031-04-10");
  }
  await leadViewsRule(400).oldestRowAgeMs(pool, CLOCK);
}

/** The rebuild's statements over a replay of one log partition's views. */
async function runRebuild(pool: Pool): Promise<void> {
  const shadow = createShadowLedger(pool);
  await shadow.reset();
  await pool.query(
    `INSERT INTO lead_views_shadow SELECT tenant_id, day, folio, billing_period_start, surface,
       request_id, key_id, member_id, recorded_at, source_partition, source_offset
       FROM lead_views`,
  );
  const high = new Map(Array.from({ length: 12 }, (_, partition) => [partition, "10000000"]));
  const low = new Map(Array.from({ length: 12 }, (_, partition) => [partition, "0"]));
  await shadow.differences(high, low);
  await shadow.counterDifferences();
  // A repair of one log partition's window.
  await shadow.swapIn(new Map([[5, "10000000"]]), new Map([[5, "0"]]));
  await shadow.reset();
}

describe("the ledger's plans on the partitioned lead_views (decision 0393)", () => {
  it("fills two months past the size a partition is read whole at", () => {
    expect([...large].sort()).toEqual(["lead_views_p203104", "lead_views_p203105"]);
  });

  for (const mode of ["auto", "force_generic_plan"] as const) {
    it(`reads no large partition whole on the live path (${mode} plans)`, async () => {
      const explaining = await explainingPool(mode);
      try {
        await runLivePath(explaining.pool);
      } finally {
        await explaining.pool.end();
      }
      const texts = explaining.plans.map((plan) => plan["Query Text"]);
      // The nested statements of the recording function are among them.
      expect(texts.some((text) => text.includes("INSERT INTO lead_view_runners_up"))).toBe(true);
      expect(texts.some((text) => text.includes("GROUP BY day ORDER BY day"))).toBe(true);
      const scans = explaining.plans.flatMap((plan) =>
        seqScansOfLarge(plan.Plan, large, plan["Query Text"]),
      );
      expect(scans).toEqual([]);
    });
  }

  it("reads no large partition again for each row in the rebuild's comparisons and repair", async () => {
    const explaining = await explainingPool("auto");
    try {
      await runRebuild(explaining.pool);
    } finally {
      await explaining.pool.end();
    }
    expect(explaining.plans.length).toBeGreaterThan(5);
    const scans = explaining.plans.flatMap((plan) =>
      seqScansOfLarge(plan.Plan, large, plan["Query Text"]),
    );
    expect(scans.filter((scan) => scan.repeated)).toEqual([]);
  });

  it("catches a plan that reads a large partition whole once the indexes it needs are gone", async () => {
    const client = await harness.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("ALTER TABLE lead_views DROP CONSTRAINT lead_views_pkey");
      await client.query("DROP INDEX lead_views_by_period");
      const { rows } = await client.query<{ "QUERY PLAN": CapturedPlan[] }>(
        `EXPLAIN (FORMAT JSON) SELECT folio FROM lead_views
          WHERE tenant_id = $1 AND day = $2 ORDER BY folio`,
        [tenants[0], "2031-05-15"],
      );
      const plan = rows[0]?.["QUERY PLAN"][0] as CapturedPlan;
      expect(seqScansOfLarge(plan.Plan, large, "seed").map((scan) => scan.relation)).toEqual([
        "lead_views_p203105",
      ]);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});

const OLD_TENANTS = 300;
const OLD_MONTHS = 16;
const DAY_MS = 86_400_000;

interface ScanNode extends PlanNode {
  "Index Name"?: string;
  "Index Cond"?: string;
  Filter?: string;
}

/**
 * Every read of `partition` in a plan that may go through all of it: a sequential scan, or an
 * index scan whose condition does not bound tenant_id, the leading column of both its indexes
 * (a condition on day alone walks the whole index). An index scan with no condition at all
 * under a Limit and without a filter reads the first entries only, and is not one.
 */
function wholeReads(node: ScanNode, partition: string, parent?: ScanNode): string[] {
  const onPartition =
    node["Relation Name"] === partition || node["Index Name"]?.startsWith(`${partition}_`);
  const type = node["Node Type"];
  const cond = node["Index Cond"];
  const firstEntries = !cond && !node.Filter && parent?.["Node Type"] === "Limit";
  const whole =
    onPartition &&
    (type === "Seq Scan" ||
      (type.includes("Index") && !firstEntries && !cond?.includes("tenant_id")));
  const here = whole ? [`${type} ${node["Index Name"] ?? ""} ${cond ?? node.Filter ?? ""}`] : [];
  return here.concat(
    (node.Plans ?? []).flatMap((child) => wholeReads(child as ScanNode, partition, node)),
  );
}

/**
 * The first partition as an upgraded installation has it: a view a day of each of 300 tenants
 * over the 16 months before its end (about 145,000 rows), analysed. Answers its name and the
 * first day it holds.
 */
async function fillFirstPartition(pool: Pool): Promise<{ name: string; start: Date }> {
  const first = (await listPartitions(pool, "lead_views")).find((p) => p.from === null);
  if (!first?.to) {
    throw new Error("lead_views has no first partition");
  }
  const start = monthStart(first.to, -OLD_MONTHS);
  await pool.query(
    `INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
                             recorded_at, source_partition, source_offset)
     SELECT 'ten_old_' || lpad(t::text, 3, '0'), d.day, 'O' || t || '_' || d.day,
            date_trunc('month', d.day)::date, 'rest', 'req_old_' || t || '_' || d.day,
            d.day + time '09:00', t % 12, row_number() OVER ()
       FROM generate_series(1, $1::int) AS t
      CROSS JOIN generate_series($2::date, $3::date - 1, interval '1 day') AS d(day)`,
    [OLD_TENANTS, start, first.to],
  );
  await pool.query(`ANALYZE "${first.name}"`);
  return { name: first.name, start };
}

describe("retention's sweep of the partition made from the table as it was (decision 0393)", () => {
  let first: { name: string; start: Date };
  beforeAll(async () => {
    first = await fillFirstPartition(harness.pool);
  }, 120_000);

  it("fills the first partition past the size a partition is read whole at", async () => {
    const { rows } = await harness.pool.query<{ n: number }>(
      "SELECT reltuples::int AS n FROM pg_class WHERE oid = $1::regclass",
      [first.name],
    );
    expect(rows[0]?.n).toBeGreaterThan(LARGE);
  });

  for (const mode of ["auto", "force_generic_plan"] as const) {
    it(`reads it through its key, never whole, with nothing expired and with a backlog (${mode} plans)`, async () => {
      const explaining = await explainingPool(mode);
      const rule = leadViewsRule(400);
      // The horizon at the first month it holds (nothing before it), then at the next one (a
      // month of every tenant's views expired, far more than a batch).
      const rounds = [
        { at: new Date(first.start.getTime() + 400.5 * DAY_MS), removed: 0 },
        { at: new Date(monthStart(first.start, 1).getTime() + 400.5 * DAY_MS), removed: 1_000 },
      ];
      const reads: Record<string, string[]> = {};
      try {
        for (const { at, removed } of rounds) {
          explaining.plans.length = 0;
          expect(await rule.sweep(explaining.pool, at, 1_000)).toBe(removed);
          const deletes = explaining.plans.filter((plan) => plan["Query Text"].includes("DELETE"));
          expect(deletes).toHaveLength(1);
          reads[`${removed} removed`] = explaining.plans.flatMap((plan) =>
            wholeReads(plan.Plan, first.name),
          );
        }
      } finally {
        await explaining.pool.end();
      }
      expect(reads).toEqual({ "0 removed": [], "1000 removed": [] });
    });
  }

  it("catches a read of it that filters on day alone", async () => {
    const { rows } = await harness.pool.query<{ "QUERY PLAN": CapturedPlan[] }>(
      `EXPLAIN (FORMAT JSON) SELECT tenant_id, day, folio FROM "${first.name}"
        WHERE day < $1 LIMIT 1000`,
      [first.start],
    );
    const plan = rows[0]?.["QUERY PLAN"][0] as CapturedPlan;
    expect(wholeReads(plan.Plan, first.name)).toHaveLength(1);
  });
});
