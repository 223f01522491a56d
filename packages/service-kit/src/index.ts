export { createHttpApp, type HttpApp, type HttpAppOptions, toApiError } from "./app.ts";
export { isUtcInstant } from "./cursor.ts";
export {
  ApiError,
  ERROR_STATUS,
  type ErrorBody,
  type ErrorCode,
  errorBodySchema,
  errorResponses,
  type Store,
  UNAVAILABLE_RETRY_AFTER_SECONDS,
  unavailableError,
  unavailableStore,
} from "./errors.ts";
export {
  foliosFromHeader,
  foliosHeader,
  INTERNAL_HEADERS,
  type InternalCaller,
  internalCaller,
  requireSignedCalls,
  type SignedCallOptions,
} from "./internal-api.ts";
export {
  createInternalClient,
  type InternalCall,
  type InternalClient,
  type InternalClientOptions,
  type InternalIdentity,
  type InternalReply,
  type InternalSigning,
  type InternalText,
  parseInternalJson,
} from "./internal-client.ts";
export {
  type InternalServer,
  type ReadinessCheck,
  startInternalServer,
} from "./internal-server.ts";
export { type Stoppable, stopOnSignals } from "./lifecycle.ts";
export { createMetrics, type Metrics, observeHttpRequests } from "./metrics.ts";
export {
  createOutboxRelay,
  enqueueEvent,
  type OutboxRelay,
  outboxMigrations,
  outboxShard,
} from "./outbox.ts";
export { rawBodyOf } from "./raw-body.ts";
export {
  createRetention,
  deleteInBatches,
  dropExpiredPartitions,
  dropPartition,
  ensureMonthlyPartitions,
  listPartitions,
  monthlyPartitionName,
  type PartitionRange,
  RETENTION_BATCH_SIZE,
  RETENTION_INTERVAL_MS,
  type Retention,
  type RetentionOptions,
  type RetentionRule,
} from "./retention.ts";
export {
  REDIS_OPTIONS,
  runService,
  type ServiceApp,
  type ServiceDeps,
  type ServiceSpec,
  type StorelessServiceDeps,
} from "./run-service.ts";
export {
  HSTS,
  NO_CONTENT_POLICY,
  registerSecurityHeaders,
  type SecurityHeaderOptions,
  securityHeaders,
} from "./security-headers.ts";
