// The soak bench's stack: keys, parcels, the quota ledger, the matcher, the webhook dispatcher and
// the gateway built in this process with `buildApp`, each on the bench's compressed clock, on a
// database of their own on the machine's Postgres, a Redis server of the bench's own and the dev
// broker in a process of its own (its records kept out of this heap). Services call each other
// over HTTP on loopback ports, as in production; the bench calls the gateway by `inject`.
// Retention timers are set a real day apart: the bench runs each service's round itself.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Bus } from "@th/bus";
import { contracts } from "@th/contracts";
import { createPool, type Pool } from "@th/db";
import { buildApp as buildGateway } from "@th/gateway/app";
import { readConfig as readGatewayConfig } from "@th/gateway/config";
import { buildApp as buildKeys } from "@th/keys/app";
import { readConfig as readKeysConfig } from "@th/keys/config";
import { migrations as keysMigrations } from "@th/keys/migrations";
import { buildApp as buildMatcher } from "@th/matcher/app";
import { readConfig as readMatcherConfig } from "@th/matcher/config";
import { migrations as matcherMigrations } from "@th/matcher/migrations";
import { buildApp as buildParcels } from "@th/parcels/app";
import { readConfig as readParcelsConfig } from "@th/parcels/config";
import { migrations as parcelsMigrations } from "@th/parcels/migrations";
import {
  type HttpApp,
  type Retention,
  type RetentionRule,
  unavailableStore,
} from "@th/service-kit";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { buildApp as buildLedger } from "../../services/quota-ledger/src/app.ts";
import { readConfig as readLedgerConfig } from "../../services/quota-ledger/src/config.ts";
import { migrations as ledgerMigrations } from "../../services/quota-ledger/src/db/migrations.ts";
import { ledgerRetentionRules } from "../../services/quota-ledger/src/db/retention.ts";
import {
  buildApp as buildDispatcher,
  DISPATCHER_TOPICS,
} from "../../services/webhook-dispatcher/src/app.ts";
import { readConfig as readDispatcherConfig } from "../../services/webhook-dispatcher/src/config.ts";
import { migrations as dispatcherMigrations } from "../../services/webhook-dispatcher/src/db/migrations.ts";
import { dispatcherRetention } from "../../services/webhook-dispatcher/src/db/retention.ts";
import { startBrokerProcess } from "./broker-process.ts";
import { startRedisProcess } from "./redis-process.ts";
import type { SoakClock } from "./soak-clock.ts";

/** A real day: the services' own retention timers never fire during a run. */
const TIMER_OFF = { RETENTION_INTERVAL_MS: "86400000" };

async function listen(http: HttpApp | undefined): Promise<string> {
  if (!http) {
    throw new Error("the service has no HTTP app");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  return `http://127.0.0.1:${(http.server.address() as AddressInfo).port}`;
}

type Harness = TestHarness<ReturnType<typeof readGatewayConfig>>;

function onStores<Config>(config: Config, harness: Harness) {
  return { ...config, DATABASE_URL: harness.db.url, KAFKA_BROKERS: harness.brokers };
}

/**
 * What the receiver answers an attempt, from the delivery's id, how often it was sent and the
 * tenant whose endpoint it is (the `t` of the endpoint's URL).
 */
export type ReceiverScript = (deliveryId: string, seen: number, tenant: number) => number;

/** A webhook receiver on loopback that answers by `script`. */
async function startReceiver(script: ReceiverScript) {
  const seen = new Map<string, number>();
  let requests = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      requests++;
      const id = String(request.headers["x-flpf-webhook-id"] ?? "");
      const count = (seen.get(id) ?? 0) + 1;
      seen.set(id, count);
      const tenant = Number(new URL(request.url ?? "/", "http://receiver").searchParams.get("t"));
      response.writeHead(script(id, count, tenant)).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    requests: () => requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Settings a run may change from production's. */
export interface SoakStackSettings {
  /** The ledger's LEAD_VIEW_RETENTION_DAYS; production's when absent. */
  leadViewDays?: number;
}

/** Keys, parcels and the ledger: the services the gateway and the dispatcher call. */
async function startUpstreams(harness: Harness, now: () => Date, settings: SoakStackSettings) {
  const keys = await buildKeys(
    {
      ...harness,
      config: onStores(readKeysConfig(TIMER_OFF), harness),
      pool: harness.db.poolFor("keys"),
    },
    { now },
  );
  const keysUrl = await listen(keys.http);
  await keys.start();
  const parcels = await buildParcels(
    {
      ...harness,
      config: onStores(readParcelsConfig(TIMER_OFF), harness),
      pool: harness.db.poolFor("parcels"),
    },
    { now },
  );
  const parcelsUrl = await listen(parcels.http);
  await parcels.start();
  // Offsets committed often, so the bench can tell when the ledger has read everything.
  const ledgerConfig = readLedgerConfig({
    ...TIMER_OFF,
    LEDGER_COMMIT_INTERVAL_MS: "100",
    ...(settings.leadViewDays === undefined
      ? {}
      : { LEAD_VIEW_RETENTION_DAYS: String(settings.leadViewDays) }),
  });
  const ledger = await buildLedger(
    {
      ...harness,
      config: onStores(ledgerConfig, harness),
      pool: harness.db.poolFor("quota_ledger"),
    },
    { now },
  );
  const ledgerUrl = await listen(ledger.http);
  await ledger.start();
  return { keys, keysUrl, parcels, parcelsUrl, ledger, ledgerUrl, ledgerConfig };
}

async function startDispatcher(
  harness: Harness,
  clock: SoakClock,
  urls: { matcher: string; ledger: string },
) {
  const pool = createPool({ url: harness.db.url, schema: dispatcherMigrations.schema, max: 10 });
  const dispatcher = await buildDispatcher(
    {
      config: {
        ...readDispatcherConfig({
          ...TIMER_OFF,
          WEBHOOK_ALLOW_LOOPBACK_HTTP: "true",
          // The 30 s and 5 min retry stages and the 30 min dead-letter wait, a thousandth: the
          // clock jumps a day between steps, so they would otherwise hold a retry partition
          // paused for real minutes. The 1 s and 5 s stages run in real time.
          LONG_DELAY_SCALE: "0.001",
          // Two days: the jump to the next day never ends a lease taken the day before, so a
          // delivery in flight across the jump is not claimed and sent again.
          LEASE_MS: "172800000",
        }),
        DATABASE_URL: harness.db.url,
        REDIS_URL: harness.config.REDIS_URL,
        KAFKA_BROKERS: harness.brokers,
        MATCHER_URL: urls.matcher,
        LEDGER_URL: urls.ledger,
      },
      logger: harness.logger,
      pool,
      redis: harness.redis,
      bus: harness.bus,
    },
    { now: () => clock.now() },
  );
  const url = await listen(dispatcher.http);
  await dispatcher.start();
  return { dispatcher, pool, url };
}

export async function startSoakStack(
  clock: SoakClock,
  script: ReceiverScript,
  settings: SoakStackSettings = {},
) {
  const now = () => clock.date();
  const broker = await startBrokerProcess(["--in-memory"]);
  const redis = await startRedisProcess();
  const tested: Harness = await createTestHarness({
    config: readGatewayConfig({ REDIS_URL: redis.url }),
    migrations: [
      keysMigrations,
      parcelsMigrations,
      ledgerMigrations,
      matcherMigrations,
      dispatcherMigrations,
    ],
    topics: [
      ...DISPATCHER_TOPICS,
      contracts.keyIssued,
      contracts.leadViewVoided,
      contracts.parcelIngested,
    ],
    brokers: [broker.address],
  });
  // The services consume with production's heartbeat and session, not the tests' short ones
  // (heartbeats of a dozen groups), and fetches that wait half a second (the broker answers a
  // waiting fetch once a record arrives; production's 5 s would only hold up each stop).
  const bus = new Bus({
    brokers: tested.brokers,
    clientId: "soak",
    logger: tested.logger,
    consumerTimings: { maxWaitTimeInMs: 500 },
    isUnavailable: (error) => unavailableStore(error) !== undefined,
  });
  const harness: Harness = { ...tested, bus };
  const upstreams = await startUpstreams(harness, now, settings);
  const matcher = await buildMatcher(
    {
      ...harness,
      config: onStores(readMatcherConfig(TIMER_OFF), harness),
      pool: harness.db.poolFor("matcher"),
    },
    { now },
  );
  const matcherUrl = await listen(matcher.http);
  await matcher.start();
  const dispatching = await startDispatcher(harness, clock, {
    matcher: matcherUrl,
    ledger: upstreams.ledgerUrl,
  });
  const receiver = await startReceiver(script);
  const gateway = await buildGateway(
    {
      ...harness,
      config: {
        ...readGatewayConfig({ REDIS_URL: redis.url }),
        KEYS_URL: upstreams.keysUrl,
        PARCELS_URL: upstreams.parcelsUrl,
        LEDGER_URL: upstreams.ledgerUrl,
        MATCHER_URL: matcherUrl,
        DISPATCHER_URL: dispatching.url,
        KAFKA_BROKERS: harness.brokers,
      },
    },
    { now: () => clock.now() },
  );
  await gateway.http?.ready();
  await gateway.start();
  const { keys, parcels, ledger } = upstreams;
  const { dispatcher } = dispatching;
  /** Each service's retention, in the order a day's rounds run them. */
  const retentions: [string, Retention][] = [
    ["keys", keys.retention],
    ["parcels", parcels.retention],
    ["quota-ledger", ledger.retention],
    ["matcher", matcher.retention],
    ["webhook-dispatcher", dispatcher.retention],
  ];
  return {
    harness,
    keys,
    parcels,
    ledger,
    matcher,
    dispatcher,
    gateway,
    receiver,
    retentions,
    ledgerSettings: upstreams.ledgerConfig,
    /** Whether consumer `group` has committed everything `topic` holds now. */
    async caughtUp(group: string, topic: string): Promise<boolean> {
      const [high, committed] = await Promise.all([
        harness.bus.highWaterMarks(topic),
        harness.bus.committedOffsets(group, topic),
      ]);
      return [...high].every(([partition, end]) => end === "0" || committed.get(partition) === end);
    },
    pools: {
      keys: harness.db.poolFor("keys"),
      parcels: harness.db.poolFor("parcels"),
      ledger: harness.db.poolFor("quota_ledger"),
      matcher: harness.db.poolFor("matcher"),
      dispatcher: dispatching.pool,
    } satisfies Record<string, Pool>,
    async close() {
      // Side by side: each consumer's stop waits out its fetch.
      await Promise.all(
        [gateway, dispatcher, matcher, ledger, parcels, keys].map(async (app) => {
          await app.stop();
          await app.http?.close();
        }),
      );
      await receiver.close();
      await dispatching.pool.end();
      await bus.close();
      await tested.close();
      await redis.stop();
      await broker.stop();
    },
  };
}

export type SoakStack = Awaited<ReturnType<typeof startSoakStack>>;

/**
 * The work each round does before it sweeps (the coming months' partitions of deliveries,
 * attempts and lead_views), for the run without retention: it makes what a round makes and
 * removes nothing. The other services' rules have none.
 */
export async function prepareWithoutSweeping(stack: SoakStack, at: Date): Promise<void> {
  const prepared: [Pool, readonly RetentionRule[]][] = [
    [stack.pools.dispatcher, dispatcherRetention],
    [
      stack.pools.ledger,
      ledgerRetentionRules({
        leadViewKeepDays: stack.ledgerSettings.LEAD_VIEW_RETENTION_DAYS,
        voidWindowDays: stack.ledgerSettings.LEAD_VIEW_VOID_WINDOW_DAYS,
      }),
    ],
  ];
  for (const [pool, rules] of prepared) {
    for (const rule of rules) {
      await rule.prepare?.(pool, at);
    }
  }
}
