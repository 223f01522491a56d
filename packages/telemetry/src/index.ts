export { createLogger, type Logger, type LoggerOptions } from "./logger.ts";
export { scrubText, scrubValue } from "./redact.ts";
export {
  injectContext,
  inSpan,
  outsideAnyTrace,
  startTelemetry,
  type Telemetry,
  type TelemetryOptions,
  traceContextOf,
  tracer,
  withExtractedContext,
} from "./tracing.ts";
