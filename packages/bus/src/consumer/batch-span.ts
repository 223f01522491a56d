import {
  type Attributes,
  type Context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  trace,
} from "@opentelemetry/api";
import { inSpan } from "@th/telemetry";

/**
 * A batch span continues the trace of its first traced record (a batch usually comes from one
 * ingest, so that is the trace of all of them) and links to at most this many records of other
 * traces; a full fetch would bloat it.
 */
export const MAX_SPAN_LINKS = 128;

export interface BatchTrace {
  /** The trace context of the first traced record; none when no record carries one. */
  readonly parent: Context | undefined;
  /** One link per record of another trace than the parent's, at most `MAX_SPAN_LINKS`. */
  readonly links: readonly Link[];
}

/** Where a batch's span belongs, from the headers of its records in offset order. */
export function batchTraceOf(headersOfRecords: readonly Record<string, string>[]): BatchTrace {
  const links: Link[] = [];
  let parent: Context | undefined;
  let parentTraceId: string | undefined;
  for (const headers of headersOfRecords) {
    if (headers.traceparent === undefined) {
      continue;
    }
    const carried = propagation.extract(ROOT_CONTEXT, headers);
    const spanContext = trace.getSpanContext(carried);
    if (spanContext && !parent) {
      parent = carried;
      parentTraceId = spanContext.traceId;
    } else if (
      spanContext &&
      spanContext.traceId !== parentTraceId &&
      links.length < MAX_SPAN_LINKS
    ) {
      links.push({ context: spanContext });
    }
  }
  return { parent, links };
}

/** Runs `work` in a span placed by `where`; a thrown error marks the span failed and goes on. */
export function inBatchSpan<T>(
  name: string,
  attributes: Attributes,
  where: BatchTrace,
  work: () => Promise<T>,
): Promise<T> {
  return inSpan(name, attributes, work, { links: [...where.links], parent: where.parent });
}
