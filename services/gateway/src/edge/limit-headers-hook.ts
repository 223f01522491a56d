import type { HttpApp } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { BillingPeriods } from "./billing-periods.ts";
import type { EdgeContext, QuotaReader } from "./edge-context.ts";
import { clientLimitHeaders, tenantLimitHeaders } from "./limit-headers.ts";

interface LimitHeaderOptions {
  remainingLeadViews: QuotaReader | undefined;
  periods: BillingPeriods;
  now: () => number;
}

/**
 * Writes the six limit headers on every answer the edge saw, and gives routes that write the raw
 * response themselves (MCP) `request.limitHeaders()` to call just before.
 */
export function registerLimitHeaders(app: HttpApp, options: LimitHeaderOptions): void {
  const { periods, now } = options;
  const iso = (date: Date) => periods.iso(date);

  /** Every response carries all six, tenant or not (the spec's "every response"). */
  function headersOf(edge: EdgeContext | undefined): Record<string, string> {
    const window = edge?.window;
    const quota = edge?.quota;
    if (window && quota && edge.tenancy) {
      return tenantLimitHeaders(window, quota, iso);
    }
    return clientLimitHeaders(window, now());
  }

  /** The headers, after reading the lead-view counter when the authorization did not find it. */
  async function limitHeaders(request: FastifyRequest): Promise<Record<string, string>> {
    const edge = request.edge;
    if (!edge) {
      return headersOf(undefined);
    }
    const quota = edge.quota;
    if (quota && edge.tenancy && quota.remaining === undefined) {
      quota.remaining = options.remainingLeadViews
        ? await options
            .remainingLeadViews(edge.tenancy, quota.limit, {
              start: quota.periodStart,
              end: quota.resetsAt,
            })
            .catch((error: unknown) => {
              // The headers must not fail the response; the next request reads the counter again.
              request.log.warn({ err: error }, "lead-view counter unavailable for headers");
              return quota.limit;
            })
        : quota.limit;
    }
    return headersOf(edge);
  }

  // Most answers know every figure already (the authorization read the lead-view counter), so
  // the headers are set without a promise; only a counter missing from Redis is read here.
  app.addHook("onSend", (request, reply: FastifyReply, payload, done) => {
    const edge = request.edge;
    if (edge?.quota && edge.tenancy && edge.quota.remaining === undefined) {
      limitHeaders(request).then(
        (headers) => {
          reply.headers(headers);
          done(null, payload);
        },
        (error: Error) => done(error),
      );
      return;
    }
    reply.headers(headersOf(edge));
    done(null, payload);
  });
  app.decorateRequest("limitHeaders", function limitHeadersOfRequest(this: FastifyRequest) {
    return limitHeaders(this);
  });
}
