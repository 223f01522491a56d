import { join } from "node:path";
import type { MigrationSet } from "@th/db";

/**
 * The Postgres schema this service owns, and its append-only migrations. It dropped its outbox
 * (it publishes straight from its work), so it applies none of service-kit's outbox migrations.
 */
export const migrations: MigrationSet = {
  schema: "quota_ledger",
  dir: join(import.meta.dirname, "migrations"),
};
