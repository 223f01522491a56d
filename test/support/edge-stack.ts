// The gateway and the keys service in one process, on real Postgres, Redis and a dev broker:
// keys listens on a free port and the gateway calls it over HTTP, as in production.
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { contracts } from "@th/contracts";
import { buildApp as buildGateway } from "@th/gateway/app";
import { readConfig as readGatewayConfig } from "@th/gateway/config";
import { buildApp as buildKeys, type KeysAppOptions } from "@th/keys/app";
import { readConfig as readKeysConfig } from "@th/keys/config";
import { migrations as keysMigrations } from "@th/keys/migrations";
import { buildApp as buildMatcher, type MatcherOptions } from "@th/matcher/app";
import { readConfig as readMatcherConfig } from "@th/matcher/config";
import { migrations as matcherMigrations } from "@th/matcher/migrations";
import { buildApp as buildParcels } from "@th/parcels/app";
import { readConfig as readParcelsConfig } from "@th/parcels/config";
import { ingestFile } from "@th/parcels/ingest";
import { migrations as parcelsMigrations } from "@th/parcels/migrations";
import { buildApp as buildPipeline } from "@th/pipeline/app";
import { readConfig as readPipelineConfig } from "@th/pipeline/config";
import { migrations as pipelineMigrations } from "@th/pipeline/migrations";
import { buildApp as buildLedger } from "@th/quota-ledger/app";
import { readConfig as readLedgerConfig } from "@th/quota-ledger/config";
import { migrations as ledgerMigrations } from "@th/quota-ledger/migrations";
import type { HttpApp } from "@th/service-kit";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import type { Logger } from "@th/telemetry";

export type EdgeStack = Awaited<ReturnType<typeof startEdgeStack>>;

async function listen(http: HttpApp | undefined): Promise<number> {
  if (!http) {
    throw new Error("the service has no HTTP app");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  return (http.server.address() as AddressInfo).port;
}

const SAMPLE_ROLL = join(
  import.meta.dirname,
  "..",
  "..",
  "services",
  "parcels",
  "sample",
  "NAL23F202501.csv",
);

type Harness = TestHarness<ReturnType<typeof readGatewayConfig>>;
type Gateway = Awaited<ReturnType<typeof buildGateway>>;

/** A service's config on the stack's database and broker. */
function onStores<Config>(config: Config, harness: Harness) {
  return { ...config, DATABASE_URL: harness.db.url, KAFKA_BROKERS: harness.brokers };
}

/** The services the gateway calls, except the matcher: keys, parcels and the quota ledger. */
async function startUpstreams(
  harness: Harness,
  testNow: (() => number) | undefined,
  keysOptions: KeysAppOptions = {},
) {
  const keys = await buildKeys(
    {
      ...harness,
      config: onStores(readKeysConfig({}), harness),
      pool: harness.db.poolFor("keys"),
    },
    { ...(testNow ? { now: () => new Date(testNow()) } : {}), ...keysOptions },
  );
  const keysPort = await listen(keys.http);
  await keys.start();
  const parcels = await buildParcels({
    ...harness,
    config: onStores(readParcelsConfig({}), harness),
    pool: harness.db.poolFor("parcels"),
  });
  const parcelsPort = await listen(parcels.http);
  const ledger = await buildLedger({
    ...harness,
    config: onStores(readLedgerConfig({}), harness),
    pool: harness.db.poolFor("quota_ledger"),
  });
  const ledgerPort = await listen(ledger.http);
  await ledger.start();
  return { keys, keysPort, parcels, parcelsPort, ledger, ledgerPort };
}

/** Matcher instances in one consumer group; the first one serves HTTP. */
function matcherFleet(harness: Harness) {
  const matcherConfig = onStores(readMatcherConfig({}), harness);
  const matchers: Awaited<ReturnType<typeof buildMatcher>>[] = [];
  return {
    matchers,
    /** Another matcher instance in the same consumer group (the first one serves HTTP). */
    async addMatcher(matcherOptions: MatcherOptions = {}) {
      const instance = await buildMatcher(
        { ...harness, config: matcherConfig, pool: harness.db.poolFor("matcher") },
        matcherOptions,
      );
      await instance.start();
      matchers.push(instance);
      return instance;
    },
  };
}

type RequestInit = {
  key?: string;
  headers?: Record<string, string>;
  body?: unknown;
  via?: Gateway;
  ip?: string;
};

/** A request to a gateway (the first unless `via` names another), from a public address. */
function gatewayRequests(gateway: Gateway) {
  return async function request(
    method: "GET" | "HEAD" | "POST" | "PATCH" | "DELETE",
    url: string,
    init: RequestInit = {},
  ) {
    const app = (init.via ?? gateway).http;
    if (!app) {
      throw new Error("gateway has no HTTP app");
    }
    return app.inject({
      method,
      url,
      remoteAddress: init.ip ?? "203.0.113.10",
      headers: { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...init.headers },
      ...(init.body !== undefined ? { payload: init.body as object } : {}),
    });
  };
}

type Request = ReturnType<typeof gatewayRequests>;

/** Starts trials through the public API, each from its own address and company. */
function trialStarter(request: Request) {
  let trials = 0;
  return async function startTrial(
    tier: "starter" | "operator" | "team" | "custom",
    extra: { password?: string } = {},
  ) {
    trials++;
    const response = await request("POST", "/v1/public/trials", {
      ip: `198.51.100.${trials % 250}`,
      body: {
        tier,
        company: `Acme ${trials}`,
        // A domain of its own per trial: trial starts are limited per email domain.
        admin_email: `owner${trials}@acme${trials}.test`,
        payment_method: "pm_card_visa",
        ...(extra.password ? { admin_password: extra.password } : {}),
      },
    });
    if (response.statusCode !== 201) {
      throw new Error(`trial failed: ${response.statusCode} ${response.body}`);
    }
    const body = response.json();
    return {
      tenantId: body.tenant.id as string,
      memberId: body.member.id as string,
      key: body.api_key.secret as string,
      keyId: body.api_key.id as string,
      email: body.member.email as string,
      passwordSetupToken: (body.password_setup?.token ?? null) as string | null,
    };
  };
}

/**
 * Waits until the matcher's parcel projection, which manual runs read, holds these folios: it is
 * fed by its own consumer group and may trail the ingest by a moment.
 */
async function projectionHolds(harness: Harness, folios: readonly string[], timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await harness.db
      .poolFor("matcher")
      .query<{ held: number }>(
        "SELECT count(*)::int AS held FROM parcel_projection WHERE folio = ANY($1::text[])",
        [folios],
      );
    if ((rows[0]?.held ?? 0) >= folios.length) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `the matcher's projection holds ${rows[0]?.held} of ${folios.length} parcels`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Ingests a roll (the sample by default) into the parcel store; returns every folio held. */
async function ingestRoll(harness: Harness, file = SAMPLE_ROLL): Promise<string[]> {
  await ingestFile(
    {
      pool: harness.db.poolFor("parcels"),
      publish: (records) => harness.bus.publishEncoded(records),
    },
    file,
    { rejectsPath: null },
  );
  const { rows } = await harness.db
    .poolFor("parcels")
    .query<{ folio: string }>("SELECT folio FROM parcels ORDER BY folio");
  const folios = rows.map((row) => row.folio);
  await projectionHolds(harness, folios);
  return folios;
}

/** Operator tooling: a Custom tenant's negotiated caps, which the gateway then reads afresh. */
async function putCustomLimits(
  keys: Awaited<ReturnType<typeof buildKeys>>,
  gateway: Gateway,
  tenantId: string,
  limits: Record<string, number>,
) {
  if (!keys.http) {
    throw new Error("no keys app");
  }
  const response = await keys.http.inject(
    signedInject(keys.http, "keys", {
      method: "PUT",
      url: `/internal/v1/operator/tenants/${tenantId}/limits`,
      body: limits,
    }),
  );
  if (response?.statusCode !== 200) {
    throw new Error(`limits not set: ${response?.body}`);
  }
  await gateway.store.forgetTenant(tenantId);
}

async function stopAll(
  apps: ReadonlyArray<{ stop(): Promise<void>; http?: { close(): unknown } }>,
) {
  for (const each of apps) {
    await each.stop();
    await each.http?.close();
  }
}

export async function startEdgeStack(
  options: {
    logger?: Logger;
    now?: () => number;
    gatewayEnv?: Record<string, string>;
    /** A broker already running (a bench's, in a process of its own); else one for this stack. */
    brokers?: string[];
    /** The keys service's card processor (the built-in one unless given) and the like. */
    keysOptions?: KeysAppOptions;
    /** A Redis of the caller's own (a bench's), instead of this machine's. */
    redisUrl?: string;
  } = {},
) {
  const harness = await createTestHarness({
    config: readGatewayConfig(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    migrations: [
      keysMigrations,
      parcelsMigrations,
      ledgerMigrations,
      matcherMigrations,
      pipelineMigrations,
    ],
    topics: [
      contracts.tenantChanged,
      contracts.keyIssued,
      contracts.keyRevoked,
      contracts.leadViewRecorded,
      contracts.leadViewVoided,
      contracts.parcelIngested,
      contracts.matchFound,
      contracts.pipelineItemChanged,
      contracts.pipelineStageChanged,
    ],
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.brokers ? { brokers: options.brokers } : {}),
  });
  const upstreams = await startUpstreams(harness, options.now, options.keysOptions);
  const { keys, parcels, ledger } = upstreams;
  const matcherInstances = matcherFleet(harness);
  const matcher = await matcherInstances.addMatcher();
  const matcherPort = await listen(matcher.http);
  const pipeline = await buildPipeline({
    ...harness,
    config: onStores(readPipelineConfig({}), harness),
    pool: harness.db.poolFor("pipeline"),
  });
  const pipelinePort = await listen(pipeline.http);
  await pipeline.start();
  // The gateway keeps no database: it reaches every store through the services above.
  const gatewayConfig = {
    ...readGatewayConfig({ ...options.gatewayEnv }),
    KEYS_URL: `http://127.0.0.1:${upstreams.keysPort}`,
    PARCELS_URL: `http://127.0.0.1:${upstreams.parcelsPort}`,
    LEDGER_URL: `http://127.0.0.1:${upstreams.ledgerPort}`,
    MATCHER_URL: `http://127.0.0.1:${matcherPort}`,
    PIPELINE_URL: `http://127.0.0.1:${pipelinePort}`,
    KAFKA_BROKERS: harness.brokers,
  };
  const gateways: Gateway[] = [];
  async function addGateway() {
    const added = await buildGateway(
      { ...harness, config: gatewayConfig },
      options.now ? { now: options.now } : {},
    );
    await added.http?.ready();
    gateways.push(added);
    return added;
  }
  const gateway = await addGateway();
  const request = gatewayRequests(gateway);

  return {
    harness,
    keys,
    parcels,
    ledger,
    matcher,
    pipeline,
    addMatcher: matcherInstances.addMatcher,
    matchers: () => [...matcherInstances.matchers],
    ingestSample: (file?: string) => ingestRoll(harness, file),
    setCustomLimits: (tenantId: string, limits: Record<string, number>) =>
      putCustomLimits(keys, gateway, tenantId, limits),
    gatewayConfig,
    /** What a gateway in a process of its own (a bench's) needs to join this stack. */
    gatewayProcessEnv: () => ({
      KEYS_URL: gatewayConfig.KEYS_URL,
      PARCELS_URL: gatewayConfig.PARCELS_URL,
      LEDGER_URL: gatewayConfig.LEDGER_URL,
      MATCHER_URL: gatewayConfig.MATCHER_URL,
      PIPELINE_URL: gatewayConfig.PIPELINE_URL,
      KAFKA_BROKERS: gatewayConfig.KAFKA_BROKERS.join(","),
      REDIS_URL: harness.config.REDIS_URL,
      REDIS_PREFIX: harness.redis.options.keyPrefix ?? "",
    }),
    gateway,
    addGateway,
    request,
    startTrial: trialStarter(request),
    async close() {
      await stopAll(gateways);
      await stopAll(matcherInstances.matchers);
      await stopAll([pipeline]);
      await ledger.stop();
      await ledger.http?.close();
      await parcels.http?.close();
      await keys.stop();
      await keys.http?.close();
      await harness.close();
    },
  };
}
