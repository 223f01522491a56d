import { randomBytes } from "node:crypto";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { Bus } from "@th/bus";
import { contracts } from "@th/contracts";
import { createLeadViewMeter, utcDay } from "@th/quota";
import { createHttpApp } from "@th/service-kit";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Config, readConfig } from "../config.ts";
import type { QuotaState } from "./authenticate.ts";
import { createMetering, type Metering } from "./metering.ts";

/** Room for a loaded machine: a charge not seen before the reads' 2 s publish timeout fails the test anyway. */
const WAIT = { timeout: 5_000 };

let harness: TestHarness<Config>;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [],
    topics: [contracts.leadViewRecorded],
  });
});
afterAll(() => harness.close());

describe("metering a read", () => {
  it("charges it as of its admission, so a read admitted before the anniversary's midnight counts in that period and on that day", async () => {
    const meter = createLeadViewMeter(harness.redis, {
      loadUsage: async () => ({ used: 0, foliosToday: [] }),
    });
    const metering = createMetering({
      meter,
      bus: harness.bus,
      upgradeUrl: "https://terminal.house/pricing",
    });
    const tenantId = `ten_${randomBytes(4).toString("hex")}`;
    const period = {
      start: new Date("2026-11-21T00:00:00Z"),
      end: new Date("2026-12-21T00:00:00Z"),
    };
    const app = await createHttpApp({
      logger: createLogger({ service: "metering-test", level: "silent" }),
      title: "metering test",
    });
    // The charge runs now, weeks from the admission: only the admission may decide day and period.
    app.get("/read", async (request) => {
      const quota: QuotaState = {
        limit: 10,
        periodStart: period.start,
        resetsAt: period.end,
        admittedAt: Date.parse("2026-12-20T23:59:59.990Z"),
      };
      request.edge = {
        tenancy: { tenantId, memberId: "mem_1", keyId: "key_1", tier: "team" },
        quota,
      };
      await metering.charge(request, ["23-A1"], "rest");
      return { remaining: quota.remaining };
    });
    const response = await app.inject({ method: "GET", url: "/read" });
    expect(response.json()).toEqual({ remaining: 9 });
    expect(await harness.redis.sismember(`th:lv:day:${tenantId}:2026-12-20`, "23-A1")).toBe(1);
    expect(await meter.remaining({ tenantId, cap: 10, period, day: "2026-12-20" })).toBe(9);
    await app.close();
  });
});

describe("reads that share a folio's charge and fail to record it", () => {
  // A broker that takes the connection and never answers: no lead-view sent to it is
  // acknowledged, so every read metered through it fails to record (after the 2 s it is given)
  // and gives its views back.
  const sockets: Socket[] = [];
  let silent: Server;
  let silentBus: Bus;
  beforeAll(async () => {
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentBus = new Bus({
      brokers: [`127.0.0.1:${(silent.address() as AddressInfo).port}`],
      clientId: "metering-silent",
      logger: createLogger({ service: "metering-test", level: "silent" }),
      retries: 0,
    });
  });
  afterAll(async () => {
    // The sockets first: the bus's admin still waits on the broker's answer, and would until
    // its request timed out.
    for (const socket of sockets) {
      socket.destroy();
    }
    await new Promise((resolve) => silent.close(resolve));
    await silentBus.close();
  });

  const cap = 10;
  const meter = () =>
    createLeadViewMeter(harness.redis, { loadUsage: async () => ({ used: 0, foliosToday: [] }) });
  const failing = () =>
    createMetering({
      meter: meter(),
      bus: silentBus,
      upgradeUrl: "https://terminal.house/pricing",
    });
  const acking = () =>
    createMetering({
      meter: meter(),
      bus: harness.bus,
      upgradeUrl: "https://terminal.house/pricing",
    });

  /** One tenant's reads of a folio, each through the metering it names; keeps each read's quota. */
  const tenantReads = async () => {
    const tenantId = `ten_${randomBytes(4).toString("hex")}`;
    const now = new Date();
    const period = {
      start: new Date(now.getTime() - 86_400_000),
      end: new Date(now.getTime() + 86_400_000),
    };
    const day = utcDay(now);
    const quotas: QuotaState[] = [];
    const app = await createHttpApp({
      logger: createLogger({ service: "metering-test", level: "silent" }),
      title: "metering test",
    });
    const meterings: Metering[] = [];
    app.get<{ Params: { metering: string; folio: string } }>(
      "/read/:metering/:folio",
      async (request) => {
        const quota: QuotaState = {
          limit: cap,
          periodStart: period.start,
          resetsAt: period.end,
          admittedAt: now.getTime(),
        };
        quotas.push(quota);
        request.edge = {
          tenancy: { tenantId, memberId: "mem_1", keyId: "key_1", tier: "team" },
          quota,
        };
        await (meterings[Number(request.params.metering)] as Metering).charge(
          request,
          [request.params.folio],
          "rest",
        );
        return { remaining: quota.remaining };
      },
    );
    return {
      quotas,
      /** Reads `folio` through `metering`; answers the response's status. */
      read: async (metering: Metering, folio: string) => {
        meterings.push(metering);
        const response = await app.inject({
          method: "GET",
          url: `/read/${meterings.length - 1}/${folio}`,
        });
        return response.statusCode;
      },
      remaining: () => meter().remaining({ tenantId, cap, period, day }),
      chargedToday: async (folio: string) =>
        (await harness.redis.sismember(`th:lv:day:${tenantId}:${day}`, folio)) === 1,
      /** Whether two reads hold the folio's pending charge: the charger and a sharer. */
      sharedByTwo: async (folio: string) =>
        /^[^,|]+,[^,|]+\|/.test(
          (await harness.redis.hget(`th:lv:pend:${tenantId}:${day}`, folio)) ?? "",
        ),
      close: () => app.close(),
    };
  };

  it("gives the folio back when both reads fail, so the counter is where it started and a third read is charged again", async () => {
    const reads = await tenantReads();
    const first = reads.read(failing(), "23-A1");
    await vi.waitFor(async () => expect(await reads.chargedToday("23-A1")).toBe(true), WAIT);
    const second = reads.read(failing(), "23-A1");
    // Both hold the charge before either gives up: the second was told to record it too.
    await vi.waitFor(async () => expect(await reads.sharedByTwo("23-A1")).toBe(true), WAIT);
    expect(await Promise.all([first, second])).toEqual([503, 503]);

    expect(await reads.remaining()).toBe(cap);
    expect(await reads.chargedToday("23-A1")).toBe(false);
    // Only the read whose give-back returned the folio counts it back in what it reports.
    const reported = reads.quotas.map((quota) => quota.remaining);
    expect(reported).toHaveLength(2);
    expect(reported).toEqual(expect.arrayContaining([cap - 1, cap]));
    expect(await reads.read(acking(), "23-A1")).toBe(200);
    expect(reads.quotas.at(-1)?.remaining).toBe(cap - 1);
    expect(await reads.chargedToday("23-A1")).toBe(true);
    await reads.close();
  });

  it("keeps the one charge when the read that charged fails and the one sharing it records", async () => {
    const reads = await tenantReads();
    const failed = reads.read(failing(), "23-B2");
    await vi.waitFor(async () => expect(await reads.chargedToday("23-B2")).toBe(true), WAIT);
    expect(await reads.read(acking(), "23-B2")).toBe(200);
    expect(await failed).toBe(503);

    expect(await reads.remaining()).toBe(cap - 1);
    expect(await reads.chargedToday("23-B2")).toBe(true);
    expect(reads.quotas.map((quota) => quota.remaining)).toEqual([cap - 1, cap - 1]);
    // Recorded and acknowledged: a third read that day is free.
    expect(await reads.read(acking(), "23-B2")).toBe(200);
    expect(reads.quotas.at(-1)?.remaining).toBe(cap - 1);
    await reads.close();
  });
});
