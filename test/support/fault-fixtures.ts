// The stacks the fault tests share, started once before a file's tests and closed after them,
// and the steps they take on them: load driven, a store taken away and brought back, and what
// was delivered or read checked and counted. A file's own hooks, registered after these, run
// after the start and before the close.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bus } from "@th/bus";
import type { MatchFound, TopicContract } from "@th/contracts";
import { type RunningBroker, startBroker } from "@th/dev-broker";
import { buildApp as buildGateway } from "@th/gateway/app";
import { REDIS_OPTIONS } from "@th/service-kit";
import { TEST_CONSUMER_TIMINGS } from "@th/service-kit/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect } from "vitest";
import { type EdgeStack, startEdgeStack } from "./edge-stack.ts";
import {
  exitOf,
  type Receiver,
  type Script,
  startReceiver,
  startWebhookStack,
  subscribedTenant,
  tallyDeliveries,
  type WebhookStack,
  waitFor,
} from "./webhook-stack.ts";

type WebhookStackOptions = NonNullable<Parameters<typeof startWebhookStack>[0]>;

type Tally = Awaited<ReturnType<typeof tallyDeliveries>>;

export interface WebhookFixture {
  stack: WebhookStack;
  receiver: Receiver;
  /** What the receiver got of `tenant`'s deliveries, once all arrived or `died()` says so. */
  tally(tenant: string, expected: number, died: () => string | undefined): Promise<Tally>;
  /**
   * `tenant` subscribed to `watchlist` at the receiver, a dispatcher process of its own with
   * `LEASE_MS` of `leaseMs`, and `count` matches published to it; resolves once `underWay` of
   * them have arrived, with the process, what its exit was (undefined while it runs) and the
   * matches.
   */
  deliveriesUnderWay(options: {
    tenant: string;
    watchlist: string;
    count: number;
    underWay: number;
    leaseMs: number;
  }): Promise<{ child: ChildProcess; exited: () => string | undefined; matches: MatchFound[] }>;
  /**
   * Takes a store away for 2 s (`away`) and brings it back (`back`): the deliveries the receiver
   * had got at the end of the 2 s, and when the store was back.
   */
  awayForTwoSeconds(
    away: () => Promise<unknown>,
    back: () => Promise<unknown>,
  ): Promise<{ seenWhileDown: number; backAt: number }>;
  /**
   * Nothing lost: once the receiver got all of `tenant`'s `expected` deliveries, the dispatcher
   * is still up (`died()` undefined), there is a delivery row for each and every row's id
   * arrived. The tally, for the fault's row.
   */
  expectEveryDelivery(
    tenant: string,
    expected: number,
    died: () => string | undefined,
  ): Promise<Tally>;
}

/**
 * A webhook stack and a loopback receiver answering `receiver`. `before` starts what the stack
 * runs on (a broker, a Postgres of the test's own) and says so in the stack's options; `after`
 * stops it once the stack is closed. `closeMayFail`: the fault may leave the stack unable to
 * close cleanly, which is not the test's finding.
 */
export function useWebhookStack(options: {
  receiver: Script;
  before?: () => Promise<WebhookStackOptions>;
  after?: () => Promise<void>;
  closeMayFail?: boolean;
}): WebhookFixture {
  const fixture = {
    tally: (tenant, expected, died) =>
      tallyDeliveries(fixture.stack, fixture.receiver, tenant, expected, died),
    async deliveriesUnderWay({ tenant, watchlist, count, underWay, leaseMs }) {
      const { stack, receiver } = fixture;
      await subscribedTenant(stack, tenant, watchlist, receiver.url);
      const child = await stack.spawnDispatcher({ LEASE_MS: String(leaseMs) });
      const exited = exitOf(child);
      const matches = Array.from({ length: count }, () => stack.match(tenant, watchlist));
      await stack.publishMatches(matches);
      await waitFor(() => receiver.received.length >= underWay, { what: "deliveries under way" });
      return { child, exited, matches };
    },
    async awayForTwoSeconds(away, back) {
      await away();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const seenWhileDown = fixture.receiver.received.length;
      await back();
      return { seenWhileDown, backAt: Date.now() };
    },
    async expectEveryDelivery(tenant, expected, died) {
      const tally = await fixture.tally(tenant, expected, died);
      expect(died()).toBeUndefined();
      expect(tally.rows).toBe(expected);
      expect(tally.missing).toBe(0);
      return tally;
    },
  } as WebhookFixture;
  beforeAll(async () => {
    fixture.stack = await startWebhookStack((await options.before?.()) ?? {});
    fixture.receiver = await startReceiver(options.receiver);
  });
  afterAll(async () => {
    await fixture.receiver?.close();
    const closed = fixture.stack?.close();
    await (options.closeMayFail ? closed?.catch(() => {}) : closed);
    await options.after?.();
  });
  return fixture;
}

export interface EdgeFixture {
  stack: EdgeStack;
  /** Every folio of the sample roll, ingested and in the matcher's projection. */
  folios: string[];
}

/** An edge stack with the sample roll ingested. */
export function useEdgeStack(): EdgeFixture {
  const fixture = {} as EdgeFixture;
  beforeAll(async () => {
    fixture.stack = await startEdgeStack();
    fixture.folios = await fixture.stack.ingestSample();
  });
  afterAll(async () => {
    await fixture.stack?.close();
  });
  return fixture;
}

/** A Custom tenant of the edge stack with `leadViews` a month and no rate limit to speak of. */
export async function customTenant(edge: EdgeStack, leadViews: number) {
  const trial = await edge.startTrial("custom");
  await edge.setCustomLimits(trial.tenantId, {
    lead_views_per_month: leadViews,
    rate_per_minute: 100_000,
  });
  return trial;
}

type Gateway = Awaited<ReturnType<typeof buildGateway>>;

/** One lead read: its folio, the request id it was sent with, status, time to answer and start. */
interface Answer {
  folio: string;
  id: string | undefined;
  status: number;
  ms: number;
  at: number;
}

/**
 * Lead reads with `key` through `via`, each timed and kept in `answers` in the order they were
 * sent; a read named `requestId` is sent with it as its x-request-id.
 */
export function timedReads(edge: EdgeStack, key: string, via: Gateway) {
  const answers: Answer[] = [];
  return {
    answers,
    async read(folio: string, requestId?: string) {
      const at = Date.now();
      const response = await edge.request("GET", `/v1/leads/${folio}`, {
        key,
        via,
        ...(requestId === undefined ? {} : { headers: { "x-request-id": requestId } }),
      });
      answers.push({ folio, id: requestId, status: response.statusCode, ms: Date.now() - at, at });
      return response;
    },
  };
}

/** The lead-views a read's response says remain this month. */
export const leadViewsRemaining = (response: { headers: Record<string, unknown> }) =>
  Number(response.headers["x-quota-lead-views-remaining"]);

/** Every value on `contract`'s topic, from the first offset. */
export async function replayed<T>(bus: Bus, contract: TopicContract<T>): Promise<T[]> {
  const values: T[] = [];
  await bus.replay(contract, {
    onBatch: async (records) => {
      values.push(...records.map((record) => record.value));
    },
  });
  return values;
}

/**
 * A dev broker of the test's own with a bus on it, provisioned with `topics`, that the test
 * stops and starts again on the same port and log directory, as a broker restart would.
 */
export async function restartableBroker(
  edge: EdgeStack,
  clientId: string,
  topics: Parameters<Bus["provision"]>[0],
) {
  const dataDir = mkdtempSync(join(tmpdir(), `th-${clientId}-`));
  let broker: RunningBroker | undefined = await startBroker({
    port: 0,
    dataDir,
    logLevel: "error",
  });
  const port = broker.port;
  const bus = privateBus(edge, broker.brokers, clientId);
  await bus.provision(topics);
  return {
    bus,
    port,
    async stop() {
      await broker?.stop();
      broker = undefined;
    },
    /** Starts the broker again, unless it is running. */
    async start() {
      broker ??= await startBroker({ port, dataDir, logLevel: "error" });
    },
    async close() {
      await bus.close();
      await broker?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A bus of the test's own on a broker it runs, with the stack's logger and fast group timings. */
export function privateBus(edge: EdgeStack, brokers: string[], clientId: string): Bus {
  return new Bus({
    brokers,
    clientId,
    logger: edge.harness.logger,
    consumerTimings: TEST_CONSUMER_TIMINGS,
  });
}

/** A gateway of the edge stack's on a Redis the test stops and restarts, ready for requests. */
export async function gatewayOnRedis(edge: EdgeStack, url: string) {
  const redis = new Redis(url, { ...REDIS_OPTIONS });
  redis.on("error", () => {});
  const gateway = await buildGateway({ ...edge.harness, redis, config: edge.gatewayConfig });
  await gateway.http?.ready();
  return {
    redis,
    gateway,
    async close() {
      await gateway.http?.close();
      redis.disconnect();
    },
  };
}
