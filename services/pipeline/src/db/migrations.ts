import { join } from "node:path";
import type { MigrationSet } from "@th/db";

/** The Postgres schema this service owns, and its append-only migrations. */
export const migrations: MigrationSet = {
  schema: "pipeline",
  dir: join(import.meta.dirname, "migrations"),
};
