import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Metrics } from "./metrics.ts";
import {
  applyServerTimeouts,
  DEFAULT_SERVER_TIMEOUTS,
  type ServerTimeouts,
} from "./server-timeouts.ts";

export type ReadinessCheck = () => Promise<boolean>;

export interface InternalServer {
  port: number;
  /** Readiness turns false at once, so load balancers stop sending work before we stop. */
  markDraining(): void;
  close(): Promise<void>;
}

/**
 * `/healthz` (the process answers) and `/readyz` (every dependency answers and we are not
 * draining) on a port of their own, so probes never pass through auth or rate limits.
 */
export async function startInternalServer(options: {
  port: number;
  host?: string;
  checks: Record<string, ReadinessCheck>;
  /** Served as Prometheus text at `/metrics`. */
  metrics?: Metrics;
  /** A check that has not answered in this long counts as failing (a store that hangs). */
  checkTimeoutMs?: number;
  /** How long a slow client is waited for; the service's settings, else the defaults. */
  timeouts?: ServerTimeouts;
}): Promise<InternalServer> {
  let draining = false;
  async function readiness() {
    const entries = await Promise.all(
      Object.entries(options.checks).map(async ([name, check]) => {
        const ok = await withinTimeout(check(), options.checkTimeoutMs ?? 1000);
        return [name, ok ? "ok" : "failing"] as const;
      }),
    );
    return { entries, ready: !draining && entries.every(([, state]) => state === "ok") };
  }
  // What /readyz answers, as a series: an alert on it names the service that is not ready.
  if (options.metrics && !options.metrics.registry.getSingleMetric("th_ready")) {
    options.metrics.gauge(
      "th_ready",
      "1 while every readiness check passes and the process is not draining, else 0",
      [] as const,
      async (gauge) => {
        gauge.set((await readiness()).ready ? 1 : 0);
      },
    );
  }
  const server: Server = createServer(async (request, response) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    if (request.url === "/healthz") {
      send(200, { status: "ok" });
      return;
    }
    if (request.url === "/readyz") {
      const { entries, ready } = await readiness();
      const checks = Object.fromEntries(entries);
      send(ready ? 200 : 503, {
        status: ready ? "ready" : draining ? "draining" : "not_ready",
        checks,
      });
      return;
    }
    if (request.url === "/metrics" && options.metrics) {
      const registry = options.metrics.registry;
      response.writeHead(200, { "content-type": registry.contentType });
      response.end(await registry.metrics());
      return;
    }
    send(404, { error: "not_found", detail: "only /healthz, /readyz and /metrics live here" });
  });
  applyServerTimeouts(server, options.timeouts ?? DEFAULT_SERVER_TIMEOUTS);
  await new Promise<void>((resolve) =>
    server.listen(options.port, options.host ?? "0.0.0.0", resolve),
  );
  return {
    port: (server.address() as AddressInfo).port,
    markDraining: () => {
      draining = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** False when the check fails or has not answered within `ms`. */
async function withinTimeout(check: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([check.catch(() => false), late]);
  } finally {
    clearTimeout(timer);
  }
}
