import { join } from "node:path";
import type { MigrationSet } from "@th/db";
import { outboxMigrations } from "@th/service-kit";

/**
 * The Postgres schema this service owns, and its append-only migrations. The outbox's later ones
 * come from service-kit (decision 0395); its own first migration made the table, and stays.
 */
export const migrations: MigrationSet = {
  schema: "pipeline",
  dir: join(import.meta.dirname, "migrations"),
  shared: [outboxMigrations.current],
};
