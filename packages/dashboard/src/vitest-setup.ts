// vitest globalSetup: the dashboard is built (only when its sources changed) before any test
// starts a gateway, so the gateway under test serves the current build.
import { ensureDashboardBuilt } from "./build.ts";

export default async function setup(): Promise<void> {
  await ensureDashboardBuilt();
}
