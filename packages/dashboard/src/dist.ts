import { join } from "node:path";

/** Where the built dashboard lives; the gateway serves it, the build step writes it. */
export const DASHBOARD_DIST = join(import.meta.dirname, "..", "dist");
