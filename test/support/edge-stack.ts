// The gateway and the keys service in one process, on real Postgres, Redis and a dev broker:
// keys listens on a free port and the gateway calls it over HTTP, as in production.
import type { AddressInfo } from "node:net";
import { contracts } from "@th/contracts";
import { buildApp as buildGateway } from "@th/gateway/app";
import { readConfig as readGatewayConfig } from "@th/gateway/config";
import { migrations as gatewayMigrations } from "@th/gateway/migrations";
import { buildApp as buildKeys } from "@th/keys/app";
import { readConfig as readKeysConfig } from "@th/keys/config";
import { migrations as keysMigrations } from "@th/keys/migrations";
import { createTestHarness } from "@th/service-kit/testing";
import type { Logger } from "@th/telemetry";

export type EdgeStack = Awaited<ReturnType<typeof startEdgeStack>>;

export async function startEdgeStack(
  options: { logger?: Logger; now?: () => number; gatewayEnv?: Record<string, string> } = {},
) {
  const harness = await createTestHarness({
    config: readGatewayConfig({}),
    migrations: [gatewayMigrations, keysMigrations],
    topics: [
      contracts.tenantChanged,
      contracts.keyIssued,
      contracts.keyRevoked,
      contracts.leadViewRecorded,
    ],
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const keys = await buildKeys({
    ...harness,
    config: { ...readKeysConfig({}), DATABASE_URL: harness.db.url, KAFKA_BROKERS: harness.brokers },
    pool: harness.db.poolFor("keys"),
  });
  const keysHttp = keys.http;
  if (!keysHttp) {
    throw new Error("the keys service has no HTTP app");
  }
  await keysHttp.listen({ port: 0, host: "127.0.0.1" });
  await keys.start();
  const keysPort = (keysHttp.server.address() as AddressInfo).port;
  const gatewayConfig = {
    ...readGatewayConfig({ ...options.gatewayEnv }),
    KEYS_URL: `http://127.0.0.1:${keysPort}`,
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
    method: "GET" | "POST" | "DELETE",
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
  async function startTrial(tier: "starter" | "operator" | "team" | "custom") {
    trials++;
    const response = await request("POST", "/v1/public/trials", {
      ip: `198.51.100.${trials % 250}`,
      body: {
        tier,
        company: `Acme ${trials}`,
        admin_email: `owner${trials}@acme.test`,
        payment_method: "pm_card_visa",
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
    };
  }

  return {
    harness,
    keys,
    gateway,
    addGateway,
    request,
    startTrial,
    async close() {
      for (const each of gateways) {
        await each.stop();
        await each.http?.close();
      }
      await keys.stop();
      await keys.http?.close();
      await harness.close();
    },
  };
}
