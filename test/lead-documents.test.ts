// The gateway's read model of lead documents (decision 0390) and the settling of acknowledged
// lead-views, end to end and as a tenant (or a stale cache) would get them wrong: a held lead is
// served byte for byte as the parcels service answers it and still costs its lead-view; a parcel
// named by parcel.ingested is read afresh; a model whose tail of the topic fell behind serves
// nothing; a batch of held and unheld folios answers exactly what the parcels service answers; a
// bare parcel id is never held under the id; the cap holds for held reads under concurrency; and
// a re-read after the first read was answered records nothing.
import type { Bus } from "@th/bus";
import { contracts, type LeadViewRecorded } from "@th/contracts";
import * as samples from "@th/contracts/samples";
import { buildApp as buildGateway } from "@th/gateway/app";
import { signedInject } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

type Gateway = Awaited<ReturnType<typeof buildGateway>>;

let stack: EdgeStack;
let folios: string[];
let gateway: Gateway;

beforeAll(async () => {
  stack = await startEdgeStack();
  folios = await stack.ingestSample();
  gateway = await startedGateway({ LEAD_DOCUMENTS_MAX_LAG_MS: 1_000 });
});
afterAll(async () => {
  await gateway?.stop();
  await gateway?.http?.close();
  await stack.close();
});

/** A gateway that follows parcel.ingested, once its tail has caught up. */
async function startedGateway(env: Record<string, number>): Promise<Gateway> {
  const started = await buildGateway({
    ...stack.harness,
    config: { ...stack.gatewayConfig, ...env },
  });
  await started.http?.ready();
  await started.start();
  // Its first fetch at the topic's end vouches for the documents.
  await new Promise((resolve) => setTimeout(resolve, 400));
  return started;
}

async function tenant(leadViews = 1_000) {
  const trial = await stack.startTrial("custom");
  await stack.setCustomLimits(trial.tenantId, {
    lead_views_per_month: leadViews,
    rate_per_minute: 100_000,
  });
  await gateway.store.forgetTenant(trial.tenantId);
  return trial;
}

const read = (key: string, folio: string, via: Gateway = gateway) =>
  stack.request("GET", `/v1/leads/${encodeURIComponent(folio)}`, { key, via });

const parcels = () => stack.harness.db.poolFor("parcels");

const remaining = (response: { headers: Record<string, unknown> }) =>
  Number(response.headers["x-quota-lead-views-remaining"]);

/** Changes the stored lead behind `folio` without telling anyone (no parcel.ingested). */
async function changeQuietly(folio: string, marker: string): Promise<void> {
  await parcels().query(`UPDATE parcels SET detail = $2 WHERE folio = $1`, [
    folio,
    JSON.stringify({ signals: [{ name: "absentee_owner", reason: marker }], equity: null }),
  ]);
}

/** Tells the gateways: parcel.ingested names the folio (only its key is read). */
async function announce(bus: Bus, folio: string): Promise<void> {
  await bus.publish(contracts.parcelIngested, { ...samples.parcelIngested, folio });
}

async function recordedViews(tenantId: string): Promise<string[]> {
  const views: string[] = [];
  await stack.harness.bus.replay(contracts.leadViewRecorded, {
    onBatch: async (records) => {
      for (const record of records) {
        const view = record.value as LeadViewRecorded;
        if (view.tenant_id === tenantId) {
          views.push(view.folio);
        }
      }
    },
  });
  return views.sort();
}

describe("lead documents held by the gateway (decision 0390)", () => {
  it("serves a held lead byte for byte as the parcels service answered it, costing its lead-view, and reads a folio afresh once parcel.ingested names it", async () => {
    const reader = await tenant();
    const folio = folios[3] as string;
    const first = await read(reader.key, folio);
    expect(first.statusCode).toBe(200);
    await changeQuietly(folio, "changed without an event");
    // Held: the quiet change is not seen, and the read is still metered.
    const held = await read(reader.key, folio);
    expect(held.body).toBe(first.body);
    const other = await tenant();
    const before = remaining(await read(other.key, folios[4] as string));
    const heldForOther = await read(other.key, folio);
    expect(heldForOther.body).toBe(first.body);
    expect(remaining(heldForOther)).toBe(before - 1);
    await announce(stack.harness.bus, folio);
    await vi.waitFor(
      async () =>
        expect((await read(reader.key, folio)).body).toContain("changed without an event"),
      { timeout: 5_000, interval: 100 },
    );
  });

  it("serves nothing once its tail of parcel.ingested has fallen behind: reads go to the parcels service", async () => {
    const behind = await startedGateway({ LEAD_DOCUMENTS_MAX_LAG_MS: 600 });
    try {
      const reader = await tenant();
      const folio = folios[5] as string;
      expect((await read(reader.key, folio, behind)).statusCode).toBe(200);
      // The tail stops (as if the broker were unreachable), then the parcel changes.
      await behind.stop();
      await changeQuietly(folio, "changed while the tail was down");
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect((await read(reader.key, folio, behind)).body).toContain(
        "changed while the tail was down",
      );
    } finally {
      await behind.http?.close();
    }
  });

  it("C3: answers a batch of held, unheld, repeated and unknown folios exactly as the parcels service does, and charges the leads shown", async () => {
    const reader = await tenant();
    const held = folios.slice(10, 14);
    let before = 0;
    for (const folio of held) {
      before = remaining(await read(reader.key, folio));
    }
    const asked = [folios[20], held[0], "23-NO-SUCH-PARCEL", folios[21], held[1], held[0], held[2]];
    const response = await stack.request("POST", "/v1/leads/batch", {
      key: reader.key,
      via: gateway,
      body: { folios: asked },
    });
    expect(response.statusCode).toBe(200);
    const direct = await stack.parcels.http?.inject(
      signedInject(stack.parcels.http, "parcels", {
        method: "POST",
        url: "/internal/v1/parcels/lookup",
        body: { folios: asked },
      }),
    );
    expect(response.body).toBe(direct?.body);
    // The held folios were charged before; the batch adds the two new ones it shows.
    expect(remaining(response)).toBe(before - 2);
    // Now every shown folio is held, and the answer is still the parcels service's.
    const again = await stack.request("POST", "/v1/leads/batch", {
      key: reader.key,
      via: gateway,
      body: { folios: asked },
    });
    expect(again.body).toBe(direct?.body);
  });

  it("never holds a lead under a bare parcel id: a read by the id always asks the parcels service", async () => {
    const reader = await tenant();
    const folio = folios[30] as string;
    const { rows } = await parcels().query<{ parcel_id: string }>(
      "SELECT parcel_id FROM parcels WHERE folio = $1",
      [folio],
    );
    const parcelId = rows[0]?.parcel_id as string;
    expect((await read(reader.key, parcelId)).statusCode).toBe(200);
    await changeQuietly(folio, "changed under a bare id");
    const byId = await read(reader.key, parcelId);
    expect(byId.statusCode).toBe(200);
    expect(byId.body).toContain("changed under a bare id");
  });

  it("S5: never exceeds the cap with held leads: 60 concurrent reads of 60 held folios at a cap of 20 serve 20", async () => {
    const warm = await tenant();
    const sixty = folios.slice(100, 160);
    for (const folio of sixty) {
      await read(warm.key, folio);
    }
    const capped = await tenant(20);
    const responses = await Promise.all(sixty.map((folio) => read(capped.key, folio)));
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(20);
    expect(statuses.filter((status) => status === 402)).toHaveLength(40);
    await vi.waitFor(async () => expect(await recordedViews(capped.tenantId)).toHaveLength(20), {
      timeout: 10_000,
      interval: 200,
    });
  });
});

describe("settled lead-views", () => {
  it("L2: a re-read of a folio after its first read was answered is free and records nothing", async () => {
    const reader = await tenant();
    const folio = folios[40] as string;
    const first = await read(reader.key, folio);
    expect(first.statusCode).toBe(200);
    // Moments later, well inside the window in which an unsettled charge may be given back.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const again = await read(reader.key, folio);
    expect(again.statusCode).toBe(200);
    expect(remaining(again)).toBe(remaining(first));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await recordedViews(reader.tenantId)).toEqual([folio]);
  });
});
