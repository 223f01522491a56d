import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { HttpApp } from "./app.ts";

/**
 * One Prometheus registry per process, served on the internal port at `/metrics`. Services add
 * their own instruments to it; HTTP request metrics are recorded by every app `createHttpApp`
 * builds.
 */
export interface Metrics {
  registry: Registry;
  httpRequests: Histogram<"method" | "route" | "status">;
  counter<L extends string>(name: string, help: string, labels: readonly L[]): Counter<L>;
  histogram<L extends string>(
    name: string,
    help: string,
    labels: readonly L[],
    buckets: number[],
  ): Histogram<L>;
  gauge<L extends string>(
    name: string,
    help: string,
    labels: readonly L[],
    collect?: (gauge: Gauge<L>) => Promise<void> | void,
  ): Gauge<L>;
}

export function createMetrics(service: string): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  const httpRequests = new Histogram({
    name: "th_http_request_duration_seconds",
    help: "HTTP requests by method, route template and status, with their latency",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  return {
    registry,
    httpRequests,
    counter(name, help, labels) {
      return new Counter({ name, help, labelNames: labels, registers: [registry] });
    },
    histogram(name, help, labels, buckets) {
      return new Histogram({ name, help, labelNames: labels, buckets, registers: [registry] });
    },
    gauge(name, help, labels, collect) {
      return new Gauge({
        name,
        help,
        labelNames: labels,
        registers: [registry],
        ...(collect
          ? {
              async collect(this: Gauge<(typeof labels)[number]>) {
                await collect(this);
              },
            }
          : {}),
      });
    },
  };
}

/** Records every response of the app in the HTTP request histogram. */
export function observeHttpRequests(app: HttpApp, metrics: Metrics): void {
  app.addHook("onResponse", (request, reply, done) => {
    metrics.httpRequests.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? "unmatched",
        status: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
