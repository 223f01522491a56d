import { join } from "node:path";
import type { MigrationSet } from "@th/db";
import { outboxMigrations } from "@th/service-kit";

/**
 * The Postgres schema this service owns, and its append-only migrations. The outbox's come from
 * service-kit (decision 0395), the ones this schema recorded before among them.
 */
export const migrations: MigrationSet = {
  schema: "matcher",
  dir: join(import.meta.dirname, "migrations"),
  shared: [outboxMigrations.recorded, outboxMigrations.current],
};
