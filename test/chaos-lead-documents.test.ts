// The broker stopped and started again under a gateway serving held lead documents (decision
// 0390): reads are refused uncharged while it is away; a parcel that changed meanwhile is shown
// as stored once it is back (the gateway's tail of parcel.ingested starts over and forgets what
// it held); the tail keeps the documents again after the restart; and the lead-views charged are
// exactly the reads answered with a lead.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bus } from "@th/bus";
import { contracts, type LeadViewRecorded, type LeadViewVoided } from "@th/contracts";
import * as samples from "@th/contracts/samples";
import { startBroker } from "@th/dev-broker";
import { buildApp as buildGateway } from "@th/gateway/app";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { recordFault } from "./support/chaos-report.ts";
import { privateBus, useEdgeStack } from "./support/fault-fixtures.ts";

const reads = useEdgeStack();
let dataDir: string;
let broker: Awaited<ReturnType<typeof startBroker>> | undefined;
let port: number;
let bus: Bus;
let gateway: Awaited<ReturnType<typeof buildGateway>>;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "th-chaos-documents-"));
  broker = await startBroker({ port: 0, dataDir, logLevel: "error" });
  port = Number(broker.brokers[0]?.split(":").pop());
  bus = privateBus(reads.stack, broker.brokers, "chaos-documents");
  // Everything the gateway reads and writes lives on this broker.
  await bus.provision([
    contracts.leadViewRecorded,
    contracts.leadViewVoided,
    contracts.parcelIngested,
    contracts.keyIssued,
    contracts.keyRevoked,
    contracts.tenantChanged,
  ]);
  gateway = await buildGateway({
    ...reads.stack.harness,
    bus,
    config: { ...reads.stack.gatewayConfig, LEAD_DOCUMENTS_MAX_LAG_MS: 1_000 },
  });
  await gateway.http?.ready();
  await gateway.start();
  await new Promise((resolve) => setTimeout(resolve, 600));
});

afterAll(async () => {
  await gateway?.stop().catch(() => {});
  await gateway?.http?.close();
  await bus?.close();
  await broker?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const answers: { folio: string; status: number; ms: number }[] = [];

async function read(key: string, folio: string) {
  const started = Date.now();
  const response = await reads.stack.request("GET", `/v1/leads/${folio}`, { key, via: gateway });
  answers.push({ folio, status: response.statusCode, ms: Date.now() - started });
  return response;
}

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
  await bus.publish(contracts.parcelIngested, { ...samples.parcelIngested, folio });
}

/** The folios charged to `tenantId` on the private broker: recorded views not voided. */
async function charged(tenantId: string): Promise<Set<string>> {
  const voided = new Set<string>();
  await bus.replay(contracts.leadViewVoided, {
    onBatch: async (records) => {
      for (const record of records) {
        const value = record.value as LeadViewVoided;
        for (const folio of value.folios) {
          voided.add(`${value.request_id}/${folio}`);
        }
      }
    },
  });
  const folios = new Set<string>();
  await bus.replay(contracts.leadViewRecorded, {
    onBatch: async (records) => {
      for (const record of records) {
        const view = record.value as LeadViewRecorded;
        if (view.tenant_id === tenantId && !voided.has(`${view.request_id}/${view.folio}`)) {
          folios.add(view.folio);
        }
      }
    },
  });
  return folios;
}

describe("the broker stopped and started again under held lead documents", () => {
  it("refuses reads uncharged while it is away, shows a parcel changed meanwhile as stored once it is back, and charges exactly the reads answered", async () => {
    const { folios, stack } = reads;
    const trial = await stack.startTrial("custom");
    await stack.setCustomLimits(trial.tenantId, {
      lead_views_per_month: 1_000,
      rate_per_minute: 100_000,
    });
    const held = folios.slice(0, 10) as string[];
    const before = new Map<string, string>();
    for (const folio of held) {
      const response = await read(trial.key, folio);
      expect(response.statusCode).toBe(200);
      before.set(folio, response.body);
    }
    // Held: a quiet change of the store is not seen.
    await changeQuietly(held[0] as string, "changed before the outage");
    expect((await read(trial.key, held[0] as string)).body).toBe(before.get(held[0] as string));

    await broker?.stop();
    broker = undefined;
    for (const folio of folios.slice(10, 15) as string[]) {
      expect((await read(trial.key, folio)).statusCode).toBe(503);
    }
    await changeQuietly(held[1] as string, "changed while the broker was away");

    broker = await startBroker({ port, dataDir, logLevel: "error" });
    const backAt = Date.now();
    await vi.waitFor(
      async () => expect((await read(trial.key, held[1] as string)).statusCode).toBe(200),
      { timeout: 30_000, interval: 250 },
    );
    const recoveryMs = Date.now() - backAt;
    expect((await read(trial.key, held[1] as string)).body).toContain(
      "changed while the broker was away",
    );
    // The tail follows the topic again: a document read now is held (a quiet change is not seen).
    const probe = held[3] as string;
    let round = 0;
    await vi.waitFor(
      async () => {
        const first = await read(trial.key, probe);
        await changeQuietly(probe, `probe ${round++}`);
        expect((await read(trial.key, probe)).body).toBe(first.body);
      },
      { timeout: 15_000, interval: 300 },
    );
    // Nothing held before the restart is served: the change made before the outage shows.
    expect((await read(trial.key, held[0] as string)).body).toContain("changed before the outage");
    // And a change the topic names is read afresh.
    await changeQuietly(held[2] as string, "named after the restart");
    await announce(held[2] as string);
    await vi.waitFor(
      async () =>
        expect((await read(trial.key, held[2] as string)).body).toContain(
          "named after the restart",
        ),
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
      matches: null,
      uniqueDeliveries: null,
      duplicates: null,
      lost: null,
      fiveHundreds,
      unavailable: refused.length,
      slowestAnswerMs: Math.max(...answers.map((a) => a.ms)),
      recoveryMs,
      leadViewsCharged: (await charged(trial.tenantId)).size,
      readsAnswered: answered.size,
    });
  }, 120_000);
});
