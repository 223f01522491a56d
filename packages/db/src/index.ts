export { copyChunks, copyFromStdin, copyLines, copyText, needsCopyEscape } from "./copy.ts";
export { binaryCopyStream, CopyBinary } from "./copy-binary.ts";
export {
  type MigrateResult,
  type Migration,
  type MigrationSet,
  migrate,
  readMigrations,
} from "./migrate.ts";
export {
  assertSchemaName,
  createPool,
  escapeIdentifier,
  inTransaction,
  type Pool,
  type PoolClient,
  type PoolOptions,
  pingDatabase,
} from "./pool.ts";
