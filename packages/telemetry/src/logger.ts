import { trace } from "@opentelemetry/api";
import { type DestinationStream, type Logger, pino } from "pino";
import { scrubText, scrubValue } from "./redact.ts";

export type { Logger };

export interface LoggerOptions {
  service: string;
  level: string;
  /** Tests pass a stream to read what was logged. */
  destination?: DestinationStream;
}

/**
 * Structured JSON logs on stdout. Every line carries the active trace and span ids so a log line
 * leads to its trace, and every line passes through the secret scrubber before it is written.
 */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.service,
      level: options.level,
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin() {
        const span = trace.getActiveSpan();
        if (!span) {
          return {};
        }
        const { traceId, spanId } = span.spanContext();
        return { trace_id: traceId, span_id: spanId };
      },
      formatters: {
        log: (object) => scrubValue(object) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((arg) => (typeof arg === "string" ? scrubText(arg) : arg));
          method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
    },
    options.destination,
  );
}
