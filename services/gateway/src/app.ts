import { keyHashes, pepperKey, rememberingKeyHasher } from "@th/api-keys";
import type { KeyTail, RunningConsumer } from "@th/bus";
import { type KeyPeppers, keyPeppersOf } from "@th/config";
import { DASHBOARD_DIST } from "@th/dashboard/dist";
import { createLeadViewMeter, createViewedToday, ledgerUsageLoader } from "@th/quota";
import {
  ApiError,
  createHttpApp,
  createInternalClient,
  type HttpApp,
  type InternalClient,
  registerSecurityHeaders,
  type ServiceApp,
  type StorelessServiceDeps,
  securityHeaders,
} from "@th/service-kit";
import { createKeysClient } from "./clients/keys-client.ts";
import type { Config } from "./config.ts";
import { edgeStateSubscriptions } from "./consumers/edge-state.ts";
import { followParcelChanges } from "./consumers/parcel-changes.ts";
import { LeadDocuments } from "./domain/lead-documents.ts";
import { signInBackoffPolicy } from "./domain/sign-in-accounts.ts";
import { registerEdge } from "./edge/authenticate.ts";
import { createBatchCharge } from "./edge/batch-calls.ts";
import { registerClientAddress } from "./edge/client-address.ts";
import { registerPaidReadCsrf } from "./edge/csrf.ts";
import { createEdgeStore, EDGE_REDIS_OPTIONS } from "./edge/edge-store.ts";
import { createVoidPublisher } from "./edge/lead-view-voids.ts";
import { LIMIT_HEADER_DOCS, tenantlessHeaders } from "./edge/limit-headers.ts";
import { createMetering } from "./edge/metering.ts";
import { registerSessions } from "./edge/sessions.ts";
import { registerAccountRoutes } from "./routes/account.ts";
import { registerBillingRoutes } from "./routes/billing.ts";
import { registerDashboardSessionRoutes } from "./routes/dashboard-session.ts";
import {
  dashboardUiSettings,
  registerDashboardLeadRoutes,
  registerDashboardUi,
} from "./routes/dashboard-ui.ts";
import { registerDocsRoutes } from "./routes/docs.ts";
import { registerExportRoutes } from "./routes/export.ts";
import { registerHealthRoutes } from "./routes/health.ts";
import { registerLeadRoutes } from "./routes/leads.ts";
import { registerMcpRoutes } from "./routes/mcp.ts";
import { registerMeRoute } from "./routes/me.ts";
import { registerPipelineRoutes } from "./routes/pipeline.ts";
import { registerPublicRoutes } from "./routes/public.ts";
import { registerTeamRoutes } from "./routes/team.ts";
import { registerUsageRoute } from "./routes/usage.ts";
import { registerWatchlistRoutes } from "./routes/watchlists.ts";
import { webhookDocument } from "./routes/webhook-document.ts";
import { registerWebhookRoutes } from "./routes/webhooks.ts";

export const API_VERSION = "1.0.0";

export interface GatewayOptions {
  now?: () => number;
}

/**
 * How the edge hashes a presented key: under the current pepper, remembered for the keys of a
 * busy deployment's active tenants (a few megabytes at most), and under each older pepper when
 * the current one does not know it (decision 0345).
 */
function keyHashing(peppers: KeyPeppers) {
  const older = peppers.all
    .filter((pepper) => pepper.version !== peppers.current.version)
    .map((pepper) => ({ version: pepper.version, key: pepperKey(pepper.key) }));
  return {
    hashKey: rememberingKeyHasher(pepperKey(peppers.current.key), 10_000),
    olderPeppers: {
      currentVersion: peppers.current.version,
      hashes: (key: string) => keyHashes(key, older),
    },
  };
}

/**
 * The HTTP app with what every answer carries, set before any other hook: the client's address
 * behind trusted proxies, the security headers, and the tenant-less limit headers on answers
 * written before the edge could read the request.
 */
async function createGatewayHttp(deps: StorelessServiceDeps<Config>, now: () => number) {
  const { config } = deps;
  const headerOptions = { hsts: config.HSTS ?? config.NODE_ENV === "production" };
  const security = securityHeaders(headerOptions);
  const http = await createHttpApp({
    logger: deps.logger,
    title: "Terminal House API",
    version: API_VERSION,
    description: "Florida property parcels as leads: REST, webhooks and MCP.",
    // An answer written before the edge could read the request knows no tenant and no window.
    outsideHeaders: () => ({ ...tenantlessHeaders(now()), ...security }),
    documentedHeaders: LIMIT_HEADER_DOCS,
    webhooks: webhookDocument(),
  });
  // Before the edge's hooks: the per-IP windows key on the client behind trusted proxies.
  registerClientAddress(http, config.TRUSTED_PROXIES);
  // First, so that every answer carries them: errors, unknown paths and the dashboard's files.
  registerSecurityHeaders(http, headerOptions);
  return { http, security };
}

/** One signed internal client per service the gateway calls, closed with the app. */
function createUpstreams(http: HttpApp, config: Config) {
  const upstreams: InternalClient[] = [];
  const upstreamOf = (baseUrl: string, receiver: string) => {
    const client = createInternalClient({
      baseUrl,
      signing: { caller: "gateway", root: config.INTERNAL_SIGNING_SECRET, receiver },
      timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    });
    upstreams.push(client);
    return client;
  };
  http.addHook("onClose", async () => {
    await Promise.all(upstreams.map((client) => client.close()));
  });
  return {
    keys: upstreamOf(config.KEYS_URL, "keys"),
    ledger: upstreamOf(config.LEDGER_URL, "quota-ledger"),
    parcels: upstreamOf(config.PARCELS_URL, "parcels"),
    matcher: upstreamOf(config.MATCHER_URL, "matcher"),
    dispatcher: upstreamOf(config.DISPATCHER_URL, "webhook-dispatcher"),
    pipeline: upstreamOf(config.PIPELINE_URL, "pipeline"),
  };
}

/**
 * The authenticated edge and what it stands on: its Redis connection and store, the lead-view
 * meter and metering, and the dashboard's sessions.
 */
async function registerEdgeOf(
  http: HttpApp,
  deps: StorelessServiceDeps<Config>,
  upstreams: ReturnType<typeof createUpstreams>,
  now: () => number,
) {
  const { config } = deps;
  // Key requests that arrive together share one script call; on a connection of its own with
  // auto-pipelining, the other edge calls of requests that arrive together leave in one write
  // and return in one read.
  const edgeRedis = deps.redis.duplicate(EDGE_REDIS_OPTIONS);
  edgeRedis.on("error", (error) => deps.logger.warn({ err: error }, "redis connection error"));
  http.addHook("onClose", async () => {
    await edgeRedis.quit().catch(() => edgeRedis.disconnect());
  });
  const authorizeCalls = deps.metrics?.counter(
    "th_edge_authorize_calls_total",
    "Edge script calls that judged API-key requests (requests per call = requests / calls)",
    [] as const,
  );
  const store = createEdgeStore(edgeRedis, {
    tenantTtlSeconds: config.TENANT_CACHE_SECONDS,
    onAuthorizeBatch: () => authorizeCalls?.inc(),
  });
  // On the edge's auto-pipelined connection: the reservations of reads that arrive together leave
  // in one write.
  const meter = createLeadViewMeter(edgeRedis, {
    loadUsage: ledgerUsageLoader({
      get: (path, tenantId, route) =>
        upstreams.ledger.send("GET", path, { route, requestId: `seed_${tenantId}` }),
      unavailable: (detail) => new ApiError("unavailable", detail),
    }),
  });
  const leadViewsRecorded = deps.metrics?.counter(
    "th_lead_views_recorded_total",
    "Lead-views consumed and recorded, by surface",
    ["surface"] as const,
  );
  const rateLimited = deps.metrics?.counter(
    "th_rate_limit_rejections_total",
    "Requests refused with 429, by the window that refused them",
    ["scope"] as const,
  );
  const voids = createVoidPublisher({ bus: deps.bus, logger: deps.logger });
  const metering = createMetering({
    meter,
    bus: deps.bus,
    upgradeUrl: config.UPGRADE_URL,
    publishTimeoutMs: config.LEAD_VIEW_PUBLISH_TIMEOUT_MS,
    publishLingerMs: config.LEAD_VIEW_PUBLISH_LINGER_MS,
    onRecorded: (surface, count) => leadViewsRecorded?.inc({ surface }, count),
    voids,
  });
  const sessions = await registerSessions(http, {
    secret: config.SESSION_SECRET,
    accessSeconds: config.SESSION_ACCESS_SECONDS,
    refreshSeconds: config.SESSION_REFRESH_SECONDS,
    keys: upstreams.keys,
    hostPrefix: config.SESSION_COOKIE_HOST_PREFIX ?? config.NODE_ENV === "production",
  });
  registerEdge(http, {
    store,
    sessions: sessions.edge,
    onRateLimited: (scope) => rateLimited?.inc({ scope }),
    keys: createKeysClient(upstreams.keys),
    ...keyHashing(keyPeppersOf(config)),
    upgradeUrl: config.UPGRADE_URL,
    publicRatePerMinute: config.PUBLIC_RATE_PER_MINUTE,
    authFailureRatePerMinute: config.AUTH_FAILURE_RATE_PER_MINUTE,
    now,
    remainingLeadViews: (tenancy, cap, period) =>
      meter.remaining({
        tenantId: tenancy.tenantId,
        cap,
        period,
        day: new Date(now()).toISOString().slice(0, 10),
      }),
  });
  return { edgeRedis, store, metering, sessions, voids };
}

/** Builds the gateway without listening, so tests can `inject` requests. */
export async function buildApp(deps: StorelessServiceDeps<Config>, options: GatewayOptions = {}) {
  const { config } = deps;
  const now = options.now ?? (() => Date.now());
  const { http, security } = await createGatewayHttp(deps, now);
  const upstreams = createUpstreams(http, config);
  const {
    keys: keysUpstream,
    ledger: ledgerUpstream,
    parcels: parcelsUpstream,
    matcher: matcherUpstream,
    dispatcher: dispatcherUpstream,
    pipeline,
  } = upstreams;
  const { edgeRedis, store, metering, sessions, voids } = await registerEdgeOf(
    http,
    deps,
    upstreams,
    now,
  );
  // After the edge admitted a session: its reads that cost lead-views need the CSRF proof too.
  registerPaidReadCsrf(http, sessions.edge);
  registerHealthRoutes(http, { version: API_VERSION });
  registerDashboardSessionRoutes(http, {
    keys: keysUpstream,
    store,
    sessions,
    authFailureRatePerMinute: config.AUTH_FAILURE_RATE_PER_MINUTE,
    accessSeconds: config.SESSION_ACCESS_SECONDS,
    refreshSeconds: config.SESSION_REFRESH_SECONDS,
    signInBackoff: signInBackoffPolicy({
      freeAttempts: config.SIGN_IN_FREE_ATTEMPTS,
      longestLockSeconds: config.SIGN_IN_MAX_LOCK_SECONDS,
    }),
    now,
  });
  registerDashboardLeadRoutes(http, { parcels: parcelsUpstream });
  await registerDashboardUi(http, dashboardUiSettings(config, DASHBOARD_DIST));
  registerDocsRoutes(http);
  registerMeRoute(http);
  registerPublicRoutes(http, { keys: keysUpstream });
  registerBillingRoutes(http, {
    keys: keysUpstream,
    store,
    trialLimits: {
      perAddressPerHour: config.TRIAL_STARTS_PER_ADDRESS_PER_HOUR,
      perDomainPerDay: config.TRIAL_STARTS_PER_EMAIL_DOMAIN_PER_DAY,
    },
    authFailureRatePerMinute: config.AUTH_FAILURE_RATE_PER_MINUTE,
    now,
  });
  registerAccountRoutes(http, { keys: keysUpstream, store });
  registerTeamRoutes(http, {
    keys: keysUpstream,
    store,
    sessionSeconds: config.SESSION_ACCESS_SECONDS,
  });
  const documents = new LeadDocuments({
    maxChars: config.LEAD_DOCUMENTS_MB * 1_000_000,
    maxLagMs: config.LEAD_DOCUMENTS_MAX_LAG_MS,
  });
  registerLeadRoutes(http, {
    parcels: parcelsUpstream,
    matcher: matcherUpstream,
    metering,
    documents,
  });
  registerWatchlistRoutes(http, { matcher: matcherUpstream, dispatcher: dispatcherUpstream });
  registerUsageRoute(http, { ledger: ledgerUpstream });
  registerWebhookRoutes(http, { dispatcher: dispatcherUpstream, metering });
  const pipelineDeps = { pipeline, parcels: parcelsUpstream, keys: keysUpstream, metering };
  registerPipelineRoutes(http, pipelineDeps);
  registerMcpRoutes(http, {
    parcels: parcelsUpstream,
    matcher: matcherUpstream,
    pipeline,
    metering,
    chargeFurtherCalls: createBatchCharge(edgeRedis, now),
    securityHeaders: security,
  });
  registerExportRoutes(http, {
    parcels: parcelsUpstream,
    matcher: matcherUpstream,
    metering,
    upgradeUrl: config.UPGRADE_URL,
    viewedToday: createViewedToday(edgeRedis),
  });

  let consumer: RunningConsumer | undefined;
  let parcelChanges: KeyTail | undefined;
  const app: ServiceApp & { store: typeof store } = {
    http,
    store,
    async start() {
      consumer = await deps.bus.consume({
        group: "gateway.edge-state",
        subscriptions: edgeStateSubscriptions(store),
      });
      if (config.LEAD_DOCUMENTS_MB > 0) {
        parcelChanges = followParcelChanges(deps.bus, documents, deps.logger);
      }
    },
    async stop() {
      await parcelChanges?.stop();
      await consumer?.stop();
      await voids.close();
    },
  };
  return app;
}
