import type { ServiceApp, ServiceDeps } from "@th/service-kit";
import type { Config } from "./config.ts";

/** Builds the service without starting it, so tests can drive it directly. */
export async function buildApp(_deps: ServiceDeps<Config>): Promise<ServiceApp> {
  return {
    start: async () => {},
    stop: async () => {},
  };
}
