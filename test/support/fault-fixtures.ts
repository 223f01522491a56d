// The stacks the fault tests share, started once before a file's tests and closed after them.
// A file's own hooks, registered after these, run after the start and before the close.
import { Bus } from "@th/bus";
import { buildApp as buildGateway } from "@th/gateway/app";
import { REDIS_OPTIONS } from "@th/service-kit";
import { TEST_CONSUMER_TIMINGS } from "@th/service-kit/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { type EdgeStack, startEdgeStack } from "./edge-stack.ts";
import {
  type Receiver,
  type Script,
  startReceiver,
  startWebhookStack,
  tallyDeliveries,
  type WebhookStack,
} from "./webhook-stack.ts";

type WebhookStackOptions = NonNullable<Parameters<typeof startWebhookStack>[0]>;

export interface WebhookFixture {
  stack: WebhookStack;
  receiver: Receiver;
  /** What the receiver got of `tenant`'s deliveries, once all arrived or `died()` says so. */
  tally(
    tenant: string,
    expected: number,
    died: () => string | undefined,
  ): ReturnType<typeof tallyDeliveries>;
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
