// The gateway and the keys service in one process, on real Postgres, Redis and a dev broker:
// keys listens on a free port and the gateway calls it over HTTP, as in production.
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { contracts } from "@th/contracts";
import { buildApp as buildGateway } from "@th/gateway/app";
import { readConfig as readGatewayConfig } from "@th/gateway/config";
import { buildApp as buildKeys } from "@th/keys/app";
import { readConfig as readKeysConfig } from "@th/keys/config";
import { migrations as keysMigrations } from "@th/keys/migrations";
import { buildApp as buildMatcher, type MatcherOptions } from "@th/matcher/app";
import { readConfig as readMatcherConfig } from "@th/matcher/config";
import { migrations as matcherMigrations } from "@th/matcher/migrations";
import { buildApp as buildParcels } from "@th/parcels/app";
import { readConfig as readParcelsConfig } from "@th/parcels/config";
import { ingestFile } from "@th/parcels/ingest";
import { migrations as parcelsMigrations } from "@th/parcels/migrations";
import { buildApp as buildLedger } from "@th/quota-ledger/app";
import { readConfig as readLedgerConfig } from "@th/quota-ledger/config";
import { migrations as ledgerMigrations } from "@th/quota-ledger/migrations";
import type { HttpApp } from "@th/service-kit";
import { createTestHarness } from "@th/service-kit/testing";
import type { Logger } from "@th/telemetry";

export type EdgeStack = Awaited<ReturnType<typeof startEdgeStack>>;

async function listen(http: HttpApp | undefined): Promise<number> {
  if (!http) {
    throw new Error("the service has no HTTP app");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  return (http.server.address() as AddressInfo).port;
}

export const SAMPLE_ROLL = join(
  import.meta.dirname,
  "..",
  "..",
  "services",
  "parcels",
  "sample",
  "NAL23F202501.csv",
);

export async function startEdgeStack(
  options: {
    logger?: Logger;
    now?: () => number;
    gatewayEnv?: Record<string, string>;
    /** A broker already running (a bench's, in a process of its own); else one for this stack. */
    brokers?: string[];
  } = {},
) {
  const harness = await createTestHarness({
    config: readGatewayConfig({}),
    migrations: [keysMigrations, parcelsMigrations, ledgerMigrations, matcherMigrations],
    topics: [
      contracts.tenantChanged,
      contracts.keyIssued,
      contracts.keyRevoked,
      contracts.leadViewRecorded,
      contracts.leadViewVoided,
      contracts.parcelIngested,
      contracts.matchFound,
    ],
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.brokers ? { brokers: options.brokers } : {}),
  });
  const testNow = options.now;
  const keys = await buildKeys(
    {
      ...harness,
      config: {
        ...readKeysConfig({}),
        DATABASE_URL: harness.db.url,
        KAFKA_BROKERS: harness.brokers,
      },
      pool: harness.db.poolFor("keys"),
    },
    testNow ? { now: () => new Date(testNow()) } : {},
  );
  const keysPort = await listen(keys.http);
  await keys.start();
  const parcelsConfig = {
    ...readParcelsConfig({}),
    DATABASE_URL: harness.db.url,
    KAFKA_BROKERS: harness.brokers,
  };
  const parcels = await buildParcels({
    ...harness,
    config: parcelsConfig,
    pool: harness.db.poolFor("parcels"),
  });
  const parcelsPort = await listen(parcels.http);
  const ledger = await buildLedger({
    ...harness,
    config: {
      ...readLedgerConfig({}),
      DATABASE_URL: harness.db.url,
      KAFKA_BROKERS: harness.brokers,
    },
    pool: harness.db.poolFor("quota_ledger"),
  });
  const ledgerPort = await listen(ledger.http);
  await ledger.start();
  const matcherConfig = {
    ...readMatcherConfig({}),
    DATABASE_URL: harness.db.url,
    KAFKA_BROKERS: harness.brokers,
  };
  const matchers: Awaited<ReturnType<typeof buildMatcher>>[] = [];
  /** Another matcher instance in the same consumer group (the first one serves HTTP). */
  async function addMatcher(matcherOptions: MatcherOptions = {}) {
    const instance = await buildMatcher(
      { ...harness, config: matcherConfig, pool: harness.db.poolFor("matcher") },
      matcherOptions,
    );
    await instance.start();
    matchers.push(instance);
    return instance;
  }
  const matcher = await addMatcher();
  const matcherPort = await listen(matcher.http);
  const gatewayConfig = {
    ...readGatewayConfig({ ...options.gatewayEnv }),
    KEYS_URL: `http://127.0.0.1:${keysPort}`,
    PARCELS_URL: `http://127.0.0.1:${parcelsPort}`,
    LEDGER_URL: `http://127.0.0.1:${ledgerPort}`,
    MATCHER_URL: `http://127.0.0.1:${matcherPort}`,
    DATABASE_URL: harness.db.url,
    KAFKA_BROKERS: harness.brokers,
  };
  const gateways: Awaited<ReturnType<typeof buildGateway>>[] = [];
  async function addGateway() {
    const gateway = await buildGateway(
      { ...harness, config: gatewayConfig },
      options.now ? { now: options.now } : {},
    );
    await gateway.http?.ready();
    gateways.push(gateway);
    return gateway;
  }
  const gateway = await addGateway();

  async function request(
    method: "GET" | "HEAD" | "POST" | "PATCH" | "DELETE",
    url: string,
    init: {
      key?: string;
      headers?: Record<string, string>;
      body?: unknown;
      via?: typeof gateway;
      ip?: string;
    } = {},
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
  }

  let trials = 0;
  async function startTrial(
    tier: "starter" | "operator" | "team" | "custom",
    extra: { password?: string } = {},
  ) {
    trials++;
    const response = await request("POST", "/v1/public/trials", {
      ip: `198.51.100.${trials % 250}`,
      body: {
        tier,
        company: `Acme ${trials}`,
        admin_email: `owner${trials}@acme.test`,
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
  }

  /** Ingests a roll (the sample by default) into the parcel store; returns every folio held. */
  async function ingestSample(file = SAMPLE_ROLL): Promise<string[]> {
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
    await projectionHolds(folios);
    return folios;
  }

  /**
   * Waits until the matcher's parcel projection, which manual runs read, holds these folios: it
   * is fed by its own consumer group and may trail the ingest by a moment.
   */
  async function projectionHolds(folios: readonly string[], timeoutMs = 30_000) {
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

  /** Operator tooling: a Custom tenant's negotiated caps. */
  async function setCustomLimits(tenantId: string, limits: Record<string, number>) {
    const response = await keys.http?.inject({
      method: "PUT",
      url: `/internal/v1/operator/tenants/${tenantId}/limits`,
      headers: { "x-th-internal-token": readKeysConfig({}).INTERNAL_TOKEN },
      payload: limits,
    });
    if (response?.statusCode !== 200) {
      throw new Error(`limits not set: ${response?.body}`);
    }
    await gateway.store.forgetTenant(tenantId);
  }

  return {
    harness,
    keys,
    parcels,
    ledger,
    matcher,
    addMatcher,
    matchers: () => [...matchers],
    ingestSample,
    setCustomLimits,
    gatewayConfig,
    gateway,
    addGateway,
    request,
    startTrial,
    async close() {
      for (const each of gateways) {
        await each.stop();
        await each.http?.close();
      }
      for (const each of matchers) {
        await each.stop();
        await each.http?.close();
      }
      await ledger.stop();
      await ledger.http?.close();
      await parcels.http?.close();
      await keys.stop();
      await keys.http?.close();
      await harness.close();
    },
  };
}
