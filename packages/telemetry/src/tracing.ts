import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { NodeSDK } from "@opentelemetry/sdk-node";
import {
  BatchSpanProcessor,
  NoopSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace";

export interface TelemetryOptions {
  service: string;
  enabled: boolean;
  /** OTLP/HTTP endpoint; without one, spans go to the exporter passed in (tests) or nowhere. */
  endpoint?: string | undefined;
  exporter?: SpanExporter;
}

export interface Telemetry {
  shutdown(): Promise<void>;
}

/**
 * Starts OpenTelemetry once per process. Off by default: the API then hands out no-op spans and
 * the rest of the code does not need to know whether tracing is on.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  if (!options.enabled) {
    return { shutdown: async () => {} };
  }
  const processors: SpanProcessor[] = [];
  if (options.exporter) {
    processors.push(new SimpleSpanProcessor({ exporter: options.exporter }));
  }
  if (options.endpoint) {
    const url = `${options.endpoint.replace(/\/$/, "")}/v1/traces`;
    processors.push(new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) }));
  }
  if (processors.length === 0) {
    // Without any processor the SDK installs no tracer provider, and trace context would then
    // stop propagating through Kafka headers even though tracing is on.
    processors.push(new NoopSpanProcessor());
  }
  const sdk = new NodeSDK({
    serviceName: options.service,
    // Resource detectors probe the host asynchronously and hold every export until they finish.
    autoDetectResources: false,
    spanProcessors: processors,
    instrumentations: [],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}

export function tracer(name = "terminal-house") {
  return trace.getTracer(name);
}

/** Runs `work` inside a span that records failure, so callers never forget to end it. */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  where: { links?: Link[]; parent?: Context } = {},
): Promise<T> {
  return tracer().startActiveSpan(
    name,
    { attributes, ...(where.links ? { links: where.links } : {}) },
    where.parent ?? context.active(),
    async (span) => {
      try {
        return await work(span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Writes the active trace context into a string carrier (Kafka headers, HTTP headers). */
export function injectContext(carrier: Record<string, string>): Record<string, string> {
  propagation.inject(context.active(), carrier);
  return carrier;
}

/**
 * The W3C trace context fields of a carrier (Kafka headers, HTTP headers), or the active
 * context's when none is given: what a row stores so later work continues the same trace.
 */
export function traceContextOf(carrier?: Record<string, string>): Record<string, string> {
  const source = carrier ?? injectContext({});
  const picked: Record<string, string> = {};
  for (const field of TRACE_CONTEXT_FIELDS) {
    const value = source[field];
    if (value !== undefined) {
      picked[field] = value;
    }
  }
  return picked;
}

const TRACE_CONTEXT_FIELDS = ["traceparent", "tracestate"] as const;

/** Runs `work` outside any trace: for work done on behalf of rows that carry their own. */
export function outsideAnyTrace<T>(work: () => T): T {
  return context.with(ROOT_CONTEXT, work);
}

/** Runs `work` as a continuation of the trace named in the carrier. */
export function withExtractedContext<T>(carrier: Record<string, string>, work: () => T): T {
  return context.with(propagation.extract(context.active(), carrier), work);
}
