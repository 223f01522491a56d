// The webhook dispatcher beside an edge stack (its own schema, bus client and pool on the stack's
// stores, reading the stack's matcher and ledger) and a loopback receiver that records every
// POST: what the end-to-end tests of delivery and of tracing start from.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Bus } from "@th/bus";
import { createPool, migrate } from "@th/db";
import { type HttpApp, INTERNAL_HEADERS } from "@th/service-kit";
import { signedInject, TEST_CONSUMER_TIMINGS } from "@th/service-kit/testing";
import { buildApp as buildDispatcher } from "@th/webhook-dispatcher/app";
import { readConfig as readDispatcherConfig } from "@th/webhook-dispatcher/config";
import { migrations as dispatcherMigrations } from "@th/webhook-dispatcher/migrations";
import { expect, vi } from "vitest";
import type { EdgeStack } from "./edge-stack.ts";
import { DISPATCHER_TOPICS, TEST_DISPATCHER_ENV } from "./webhook-stack.ts";

/** One POST the receiver took, as it arrived. */
export interface Delivered {
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Tenant = Awaited<ReturnType<EdgeStack["startTrial"]>>;

export async function startEdgeDispatcher(stack: EdgeStack) {
  const { harness } = stack;
  await migrate(harness.db.url, dispatcherMigrations);
  await harness.bus.provision(DISPATCHER_TOPICS);
  const pool = createPool({ url: harness.db.url, schema: dispatcherMigrations.schema, max: 8 });
  const bus = new Bus({
    brokers: harness.brokers,
    clientId: "dispatcher",
    logger: harness.logger,
    consumerTimings: TEST_CONSUMER_TIMINGS,
  });
  const dispatcher = await buildDispatcher({
    config: {
      ...readDispatcherConfig(TEST_DISPATCHER_ENV),
      DATABASE_URL: harness.db.url,
      REDIS_URL: harness.config.REDIS_URL,
      KAFKA_BROKERS: harness.brokers,
      MATCHER_URL: stack.gatewayConfig.MATCHER_URL,
      LEDGER_URL: stack.gatewayConfig.LEDGER_URL,
    },
    logger: harness.logger,
    pool,
    redis: harness.redis,
    bus,
  });
  await dispatcher.start();
  const received: Delivered[] = [];
  const receiver: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({
        at: Date.now(),
        path: request.url ?? "/",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const http = dispatcher.http as HttpApp;

  return {
    dispatcher,
    received,
    /**
     * Subscribes the receiver (at `path`) to the watchlist, once the dispatcher knows the tenant
     * (from tenant.changed; until then it cannot accept); answers the endpoint's signing secret.
     */
    async subscribe(tenant: Tenant, watchlistId: string, path = "/hooks"): Promise<string> {
      let secret = "";
      await vi.waitFor(
        async () => {
          const answer = await http.inject(
            signedInject(http, "webhook-dispatcher", {
              method: "POST",
              url: `/internal/v1/watchlists/${watchlistId}/webhooks`,
              headers: {
                [INTERNAL_HEADERS.tenant]: tenant.tenantId,
                [INTERNAL_HEADERS.member]: tenant.memberId,
                [INTERNAL_HEADERS.key]: tenant.keyId,
              },
              body: { url: `${origin}${path}`, events: ["watchlist.match"] },
            }),
          );
          expect(answer?.statusCode).toBe(201);
          secret = answer?.json().secret;
        },
        { timeout: 15_000, interval: 100 },
      );
      return secret;
    },
    async close() {
      await dispatcher.stop();
      await bus.close();
      await pool.end();
      await new Promise((resolve) => receiver.close(resolve));
    },
  };
}

export type EdgeDispatcher = Awaited<ReturnType<typeof startEdgeDispatcher>>;
