// The alerts and the dashboard the chart ships read only metrics the services really serve:
// `npm start` brings every service up as its own process, each one's /metrics on its internal
// port is scraped, and every series name the rendered PrometheusRule and Grafana dashboard use
// must be among what they expose (a renamed or removed metric fails here, not in production).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricNames, renderedKit } from "./support/monitoring.ts";
import { type RunningStart, startNpmStart } from "./support/npm-start.ts";

let stack: RunningStart;
const exposed = new Map<string, { type: string; services: Set<string> }>();
const readiness = new Map<string, string>();
const texts = new Map<string, string>();

beforeAll(async () => {
  stack = await startNpmStart();
  for (const [service, port] of Object.entries(stack.internalPorts)) {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(response.status, service).toBe(200);
    const text = await response.text();
    texts.set(service, text);
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      const entry = exposed.get(name as string) ?? { type: type as string, services: new Set() };
      entry.services.add(service);
      exposed.set(name as string, entry);
    }
    readiness.set(service, text.match(/^th_ready\{[^}]*\} (\S+)$/m)?.[1] ?? "absent");
  }
}, 150_000);

afterAll(() => stack?.stop(), 60_000);

/** A histogram's series are its name plus _bucket, _count or _sum. */
function exposedAs(name: string): string | undefined {
  if (exposed.has(name)) {
    return name;
  }
  const base = name.replace(/_(bucket|count|sum)$/, "");
  return exposed.get(base)?.type === "histogram" ? base : undefined;
}

describe("the operator's kit against the running services", () => {
  it("every metric the alerts and the dashboard read is served by a running service", async () => {
    const { alerts, panelQueries, dashboard } = await renderedKit();
    const used = new Map<string, string>();
    for (const alert of alerts) {
      for (const name of metricNames(alert.expr)) {
        used.set(name, `alert ${alert.alert}`);
      }
    }
    for (const { panel, expr } of panelQueries) {
      for (const name of metricNames(expr)) {
        used.set(name, `panel ${panel}`);
      }
    }
    for (const variable of dashboard.templating.list) {
      for (const name of metricNames(JSON.stringify(variable.query))) {
        used.set(name, "dashboard variable");
      }
    }
    // Prometheus writes `up` itself for every target; the services cannot expose it.
    used.delete("up");
    expect(used.size).toBeGreaterThan(10);
    const missing = [...used].filter(([name]) => exposedAs(name) === undefined);
    expect(missing, "read by the kit but served by no service").toEqual([]);
  });

  it("every service serves th_ready, and it reads 1 while the service is ready", () => {
    expect(Object.fromEntries(readiness)).toEqual({
      gateway: "1",
      keys: "1",
      "quota-ledger": "1",
      parcels: "1",
      matcher: "1",
      pipeline: "1",
      "webhook-dispatcher": "1",
    });
  });

  it("the consumers serve their lag and end offsets, the ledger its drift, the dispatcher its attempt latency", () => {
    for (const consumer of ["quota-ledger", "matcher", "webhook-dispatcher"]) {
      expect(exposed.get("th_consumer_lag")?.services.has(consumer), consumer).toBe(true);
    }
    expect(exposed.get("th_topic_end_offset")?.services.has("matcher")).toBe(true);
    // npm start ingests the 300-parcel sample roll once: the end offsets of parcel.ingested,
    // added up over partitions, are the parcels published.
    const published = [
      ...(texts.get("matcher") ?? "").matchAll(
        /^th_topic_end_offset\{[^}]*topic="parcel\.ingested"[^}]*\} (\d+)$/gm,
      ),
    ].reduce((sum, match) => sum + Number(match[1]), 0);
    expect(published).toBe(300);
    expect(exposed.get("th_quota_counter_drift_lead_views")?.services).toEqual(
      new Set(["quota-ledger"]),
    );
    expect(exposed.get("th_delivery_attempt_duration_seconds")).toEqual({
      type: "histogram",
      services: new Set(["webhook-dispatcher"]),
    });
  });
});
