// The broker stopped and started again under a gateway serving held lead documents (decision
// 0390): reads are refused uncharged while it is away; a parcel that changed meanwhile is shown
// as stored once it is back (the gateway's tail of parcel.ingested starts over and forgets what
// it held); the tail keeps the documents again after the restart; and the lead-views charged are
// exactly the reads answered with a lead.
import { contracts } from "@th/contracts";
import * as samples from "@th/contracts/samples";
import { buildApp as buildGateway } from "@th/gateway/app";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { readCounts, recordFault } from "./support/chaos-report.ts";
import {
  customTenant,
  replayed,
  restartableBroker,
  timedReads,
  useEdgeStack,
} from "./support/fault-fixtures.ts";

const reads = useEdgeStack();
let broker: Awaited<ReturnType<typeof restartableBroker>>;
let gateway: Awaited<ReturnType<typeof buildGateway>>;

beforeAll(async () => {
  // Everything the gateway reads and writes lives on a broker of the test's own.
  broker = await restartableBroker(reads.stack, "chaos-documents", [
    contracts.leadViewRecorded,
    contracts.leadViewVoided,
    contracts.parcelIngested,
    contracts.keyIssued,
    contracts.keyRevoked,
    contracts.tenantChanged,
  ]);
  gateway = await buildGateway({
    ...reads.stack.harness,
    bus: broker.bus,
    config: { ...reads.stack.gatewayConfig, LEAD_DOCUMENTS_MAX_LAG_MS: 1_000 },
  });
  await gateway.http?.ready();
  await gateway.start();
  await new Promise((resolve) => setTimeout(resolve, 600));
});

afterAll(async () => {
  await gateway?.stop().catch(() => {});
  await gateway?.http?.close();
  await broker?.close();
});

async function changeQuietly(folio: string, marker: string): Promise<void> {
  await reads.stack.harness.db
    .poolFor("parcels")
    .query("UPDATE parcels SET detail = $2 WHERE folio = $1", [
      folio,
      JSON.stringify({ signals: [{ name: "absentee_owner", reason: marker }], equity: null }),
    ]);
}

/** parcel.ingested names the folio (the gateway reads only the key). */
async function announce(folio: string): Promise<void> {
  await broker.bus.publish(contracts.parcelIngested, { ...samples.parcelIngested, folio });
}

/** The folios charged to `tenantId` on the private broker: recorded views not voided. */
async function charged(tenantId: string): Promise<Set<string>> {
  const voided = new Set(
    (await replayed(broker.bus, contracts.leadViewVoided)).flatMap((value) =>
      value.folios.map((folio) => `${value.request_id}/${folio}`),
    ),
  );
  return new Set(
    (await replayed(broker.bus, contracts.leadViewRecorded))
      .filter(
        (view) => view.tenant_id === tenantId && !voided.has(`${view.request_id}/${view.folio}`),
      )
      .map((view) => view.folio),
  );
}

describe("the broker stopped and started again under held lead documents", () => {
  it("refuses reads uncharged while it is away, shows a parcel changed meanwhile as stored once it is back, and charges exactly the reads answered", async () => {
    const { folios, stack } = reads;
    const trial = await customTenant(stack, 1_000);
    const { answers, read } = timedReads(stack, trial.key, gateway);
    const held = folios.slice(0, 10) as string[];
    const before = new Map<string, string>();
    for (const folio of held) {
      const response = await read(folio);
      expect(response.statusCode).toBe(200);
      before.set(folio, response.body);
    }
    // Held: a quiet change of the store is not seen.
    await changeQuietly(held[0] as string, "changed before the outage");
    expect((await read(held[0] as string)).body).toBe(before.get(held[0] as string));

    await broker.stop();
    for (const folio of folios.slice(10, 15) as string[]) {
      expect((await read(folio)).statusCode).toBe(503);
    }
    await changeQuietly(held[1] as string, "changed while the broker was away");

    await broker.start();
    const backAt = Date.now();
    await vi.waitFor(async () => expect((await read(held[1] as string)).statusCode).toBe(200), {
      timeout: 30_000,
      interval: 250,
    });
    const recoveryMs = Date.now() - backAt;
    expect((await read(held[1] as string)).body).toContain("changed while the broker was away");
    // The tail follows the topic again: a document read now is held (a quiet change is not seen).
    const probe = held[3] as string;
    let round = 0;
    await vi.waitFor(
      async () => {
        const first = await read(probe);
        await changeQuietly(probe, `probe ${round++}`);
        expect((await read(probe)).body).toBe(first.body);
      },
      { timeout: 15_000, interval: 300 },
    );
    // Nothing held before the restart is served: the change made before the outage shows.
    expect((await read(held[0] as string)).body).toContain("changed before the outage");
    // And a change the topic names is read afresh.
    await changeQuietly(held[2] as string, "named after the restart");
    await announce(held[2] as string);
    await vi.waitFor(
      async () => expect((await read(held[2] as string)).body).toContain("named after the restart"),
      { timeout: 10_000, interval: 100 },
    );

    const answered = new Set(answers.filter((a) => a.status === 200).map((a) => a.folio));
    const fiveHundreds = answers.filter((a) => a.status >= 500 && a.status !== 503).length;
    const refused = answers.filter((a) => a.status === 503);
    await vi.waitFor(async () => expect(await charged(trial.tenantId)).toEqual(answered), {
      timeout: 15_000,
      interval: 250,
    });
    expect(fiveHundreds).toBe(0);
    expect(Math.max(...refused.map((a) => a.ms))).toBeLessThan(2_500);
    recordFault({
      fault: "broker stopped and started under held lead documents",
      ...readCounts(answers),
      recoveryMs,
      leadViewsCharged: (await charged(trial.tenantId)).size,
      readsAnswered: answered.size,
    });
  }, 120_000);
});
