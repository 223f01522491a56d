import { createHttpApp, type ServiceApp, type ServiceDeps } from "@th/service-kit";
import type { Config } from "./config.ts";
import { registerHealthRoutes } from "./routes/health.ts";

export const API_VERSION = "1.0.0";

/** Builds the gateway without listening, so tests can `inject` requests. */
export async function buildApp(deps: ServiceDeps<Config>): Promise<ServiceApp> {
  const http = await createHttpApp({
    logger: deps.logger,
    title: "Terminal House API",
    version: API_VERSION,
    description: "Florida property parcels as leads: REST, webhooks and MCP.",
  });
  registerHealthRoutes(http, { version: API_VERSION });
  http.get("/v1/openapi.json", { schema: { hide: true } }, async () => http.swagger());
  return {
    http,
    start: async () => {},
    stop: async () => {},
  };
}
