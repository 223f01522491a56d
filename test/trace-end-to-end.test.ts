// Observability: one OpenTelemetry trace from a NAL ingest through matching and webhook delivery
// to the receiver. Context travels in Kafka headers between services, in the outbox rows and the
// delivery rows in between, and in a `traceparent` header on the webhook request.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Bus } from "@th/bus";
import { createPool, migrate, type Pool } from "@th/db";
import { type HttpApp, INTERNAL_HEADERS } from "@th/service-kit";
import { signedInject, TEST_CONSUMER_TIMINGS } from "@th/service-kit/testing";
import { type ReadableSpan, recordSpans } from "@th/telemetry/testing";
import { buildApp as buildDispatcher } from "@th/webhook-dispatcher/app";
import { readConfig as readDispatcherConfig } from "@th/webhook-dispatcher/config";
import { migrations as dispatcherMigrations } from "@th/webhook-dispatcher/migrations";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import { DISPATCHER_TOPICS, TEST_DISPATCHER_ENV } from "./support/webhook-stack.ts";

// Registered before any service starts, so every span of this process is recorded.
const tracing = recordSpans("trace-end-to-end");

let stack: EdgeStack;
let dispatcher: Awaited<ReturnType<typeof buildDispatcher>>;
let dispatcherPool: Pool;
let dispatcherBus: Bus;
let receiver: Server;
const received: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  stack = await startEdgeStack();
  const { harness } = stack;
  await migrate(harness.db.url, dispatcherMigrations);
  await harness.bus.provision(DISPATCHER_TOPICS);
  dispatcherPool = createPool({ url: harness.db.url, schema: dispatcherMigrations.schema, max: 8 });
  dispatcherBus = new Bus({
    brokers: harness.brokers,
    clientId: "dispatcher",
    logger: harness.logger,
    consumerTimings: TEST_CONSUMER_TIMINGS,
  });
  dispatcher = await buildDispatcher({
    config: {
      ...readDispatcherConfig(TEST_DISPATCHER_ENV),
      DATABASE_URL: harness.db.url,
      REDIS_URL: harness.config.REDIS_URL,
      KAFKA_BROKERS: harness.brokers,
      MATCHER_URL: stack.gatewayConfig.MATCHER_URL,
      LEDGER_URL: stack.gatewayConfig.LEDGER_URL,
    },
    logger: harness.logger,
    pool: dispatcherPool,
    redis: harness.redis,
    bus: dispatcherBus,
  });
  await dispatcher.start();
  receiver = createServer((request, response) => {
    received.push(request.headers);
    request.resume();
    request.on("end", () => response.writeHead(200).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
});

afterAll(async () => {
  await dispatcher?.stop();
  await dispatcherBus?.close();
  await dispatcherPool?.end();
  await new Promise((resolve) => receiver?.close(resolve));
  await stack?.close();
  await tracing.shutdown();
});

function traceIdOf(traceparent: string | string[] | undefined): string | undefined {
  return typeof traceparent === "string" ? traceparent.split("-")[1] : undefined;
}

describe("one trace from ingest to the receiver", () => {
  it("carries the ingest's trace through matching and delivery to the webhook's traceparent", async () => {
    const operator = await stack.startTrial("operator");
    const created = await stack.request("POST", "/v1/watchlists", {
      key: operator.key,
      body: {
        name: "Everything in Broward",
        recipe: { filters: { counties: [23] }, signals: { high_equity: 1 }, min_score: 0 },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const watchlistId = created.json().id as string;

    const port = (receiver.address() as AddressInfo).port;
    const subscribe = () =>
      (dispatcher.http as HttpApp).inject(
        signedInject(dispatcher.http as HttpApp, "webhook-dispatcher", {
          method: "POST",
          url: `/internal/v1/watchlists/${watchlistId}/webhooks`,
          headers: {
            [INTERNAL_HEADERS.tenant]: operator.tenantId,
            [INTERNAL_HEADERS.member]: operator.memberId,
            [INTERNAL_HEADERS.key]: operator.keyId,
          },
          body: { url: `http://127.0.0.1:${port}/hooks`, events: ["watchlist.match"] },
        }),
      );
    // The dispatcher learns the tenant's tier from tenant.changed; until then it cannot accept.
    await vi.waitFor(async () => expect((await subscribe())?.statusCode).toBe(201), {
      timeout: 15_000,
      interval: 100,
    });

    tracing.reset();
    await stack.ingestSample();
    await vi.waitFor(() => expect(received.length).toBeGreaterThan(0), {
      timeout: 30_000,
      interval: 50,
    });

    const ingestSpans = tracing.spans().filter((span) => span.name.startsWith("ingest "));
    expect(ingestSpans).toHaveLength(1);
    const ingestSpan = ingestSpans[0] as ReadableSpan;
    const traceId = ingestSpan.spanContext().traceId;
    expect(ingestSpan.parentSpanContext).toBeUndefined();

    const delivered = received.map((headers) => traceIdOf(headers.traceparent));
    expect(delivered.every((id) => id === traceId)).toBe(true);

    // Each service's work is part of that trace: matching, the match's intake, the POST itself.
    await vi.waitFor(
      () => {
        const names = tracing
          .spans()
          .filter((span) => span.spanContext().traceId === traceId)
          .map((span) => span.name);
        expect(names).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/parcel\.ingested/),
            expect.stringMatching(/match\.found/),
            expect.stringMatching(/^webhook POST/),
          ]),
        );
      },
      { timeout: 10_000 },
    );
    const post = tracing
      .spans()
      .find(
        (span) => span.name.startsWith("webhook POST") && span.spanContext().traceId === traceId,
      );
    // The receiver's traceparent names the POST span itself, so its spans nest under it.
    const postSpanIds = new Set(
      received.map((headers) => (headers.traceparent as string).split("-")[2]),
    );
    expect(postSpanIds.has(post?.spanContext().spanId as string)).toBe(true);
  });
});
