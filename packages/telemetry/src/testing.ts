import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { startTelemetry, type Telemetry } from "./tracing.ts";

export type { ReadableSpan };

/**
 * Tracing for tests: every span ended in this process is kept in memory, so a test can assert
 * that work across services formed one trace.
 */
export function recordSpans(service = "test"): Telemetry & {
  spans(): ReadableSpan[];
  reset(): void;
} {
  const exporter = new InMemorySpanExporter();
  const telemetry = startTelemetry({ service, enabled: true, exporter });
  return Object.assign(telemetry, {
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
  });
}
