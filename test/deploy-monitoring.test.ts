// The chart's operator's kit, checked offline: a ServiceMonitor per service, a PrometheusRule
// with the alerts the runbooks describe (valid for `promtool check rules`), a Grafana dashboard
// ConfigMap for the sidecar covering the panels operators look at; each part off by default.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { chart, metricNames, renderChart, renderedKit } from "./support/monitoring.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const services = ["gateway", "keys", "quota-ledger", "parcels", "matcher", "webhook-dispatcher"];

describe("the chart's operator's kit", () => {
  it("renders none of it by default", async () => {
    const bare = await renderChart(
      "--set",
      "monitoring.serviceMonitor.enabled=false",
      "--set",
      "monitoring.prometheusRule.enabled=false",
      "--set",
      "monitoring.grafanaDashboard.enabled=false",
    );
    expect(
      bare.filter((manifest) => manifest.apiVersion.startsWith("monitoring.coreos.com")),
    ).toEqual([]);
    expect(bare.find((manifest) => manifest.metadata.name === "th-dashboard")).toBeUndefined();
    const defaults = parse(readFileSync(join(chart, "values.yaml"), "utf8")).monitoring;
    expect([
      defaults.serviceMonitor.enabled,
      defaults.prometheusRule.enabled,
      defaults.grafanaDashboard.enabled,
    ]).toEqual([false, false, false]);
  });

  it("scrapes every service's /metrics on its internal port, keeping the series' own service label", async () => {
    const manifests = await renderChart();
    const monitors = manifests.filter((manifest) => manifest.kind === "ServiceMonitor");
    expect(monitors.map((monitor) => monitor.metadata.name).sort()).toEqual(
      services.map((service) => `th-${service}`).sort(),
    );
    for (const monitor of monitors) {
      const service = manifests.find(
        (manifest) =>
          manifest.kind === "Service" && manifest.metadata.name === monitor.metadata.name,
      );
      expect(monitor.spec.selector.matchLabels).toEqual(service?.spec.selector);
      expect(monitor.metadata.labels?.release).toBe("kube-prometheus-stack");
      expect(monitor.spec.endpoints).toEqual([
        expect.objectContaining({ port: "internal", path: "/metrics", honorLabels: true }),
      ]);
      expect(service?.spec.ports.map((port: { name: string }) => port.name)).toContain("internal");
    }
  });

  it("alerts on lag, dead letters, webhook success, parked deliveries, gateway 5xx, ledger drift and readiness, each with a runbook that exists", async () => {
    const { alerts } = await renderedKit();
    expect(alerts.map((alert) => alert.alert).sort()).toEqual(
      [
        "TerminalHouseConsumerLagGrowing",
        "TerminalHouseDeadLettersRising",
        "TerminalHouseGateway5xxRate",
        "TerminalHouseLedgerRedisDrift",
        "TerminalHouseParkedDeliveries",
        "TerminalHouseServiceNotReady",
        "TerminalHouseWebhookSuccessRateLow",
      ].sort(),
    );
    const operations = readFileSync(join(root, "docs", "operations.md"), "utf8");
    const anchors = new Set(
      [...operations.matchAll(/^#{2,4} (.+)$/gm)].map((heading) =>
        (heading[1] as string)
          .toLowerCase()
          .replace(/[^\w\- ]/g, "")
          .replaceAll(" ", "-"),
      ),
    );
    for (const alert of alerts) {
      const url = alert.annotations.runbook_url ?? "";
      expect(url, alert.alert).toMatch(/^https:\/\/terminal\.house\/docs\/operations\.md#/);
      expect(anchors, `${alert.alert} -> ${url}`).toContain(url.split("#")[1]);
      expect(alert.labels.severity, alert.alert).toMatch(/^(info|warning|critical)$/);
      expect(alert.labels.team, alert.alert).toBe("data-platform");
      expect(alert.expr, alert.alert).toContain('namespace="terminal-house"');
      expect(metricNames(alert.expr).length, alert.alert).toBeGreaterThan(0);
    }
  });

  it("passes promtool check rules", async () => {
    const { rule } = await renderedKit();
    const file = join(mkdtempSync(join(tmpdir(), "th-rules-")), "rules.yaml");
    writeFileSync(file, stringify({ groups: rule.spec.groups }));
    const result = await run("promtool", ["check", "rules", file]).catch(
      (error: { code?: string; stdout?: string; stderr?: string; message: string }) => {
        if (error.code === "ENOENT") {
          throw new Error(
            "promtool is not installed: apt-get install prometheus (.ci/run installs it)",
          );
        }
        throw new Error(`${error.message}\n${error.stdout}\n${error.stderr}`);
      },
    );
    expect(result.stdout).toMatch(/SUCCESS: 7 rules found/);
  });

  it("ships a Grafana dashboard ConfigMap with the sidecar label covering requests, refusals, lag, deliveries and ingest", async () => {
    const { dashboardMap, dashboard, panelQueries } = await renderedKit();
    expect(dashboardMap.metadata.labels?.grafana_dashboard).toBe("1");
    expect(dashboardMap.metadata.annotations?.grafana_folder).toBe("Terminal House");
    const uses = (metric: string, pattern: RegExp) =>
      panelQueries.some(({ panel, expr }) => expr.includes(metric) && pattern.test(panel));
    expect(
      uses("th_http_request_duration_seconds_count", /request rate by route and status/i),
    ).toBe(true);
    expect(uses("th_http_request_duration_seconds_bucket", /latency by route/i)).toBe(true);
    expect(uses("th_rate_limit_rejections_total", /rate-limit refusals/i)).toBe(true);
    expect(
      panelQueries.some(
        ({ panel, expr }) => /quota refusals/i.test(panel) && expr.includes('status="402"'),
      ),
    ).toBe(true);
    expect(uses("th_consumer_lag", /consumer lag per group/i)).toBe(true);
    expect(uses("th_delivery_attempts_total", /by outcome/i)).toBe(true);
    expect(uses("th_delivery_attempt_duration_seconds_bucket", /attempt latency/i)).toBe(true);
    expect(uses("th_topic_end_offset", /ingest/i)).toBe(true);
    expect(
      dashboard.panels.filter((panel) => panel.type === "timeseries").length,
    ).toBeGreaterThanOrEqual(10);
  });
});
