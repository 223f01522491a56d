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
const services = [
  "gateway",
  "keys",
  "quota-ledger",
  "parcels",
  "matcher",
  "pipeline",
  "webhook-dispatcher",
];

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

  it("alerts on lag, dead letters, webhook success, parked deliveries, gateway 5xx, ledger drift, readiness, retention and held-back polls, each with a runbook that exists", async () => {
    const { alerts } = await renderedKit();
    expect(alerts.map((alert) => alert.alert).sort()).toEqual(
      [
        "TerminalHouseConsumerLagGrowing",
        "TerminalHouseDeadLettersRising",
        "TerminalHouseGateway5xxRate",
        "TerminalHouseLedgerRedisDrift",
        "TerminalHouseParkedDeliveries",
        "TerminalHousePollsHeldBack",
        "TerminalHouseRetentionBehind",
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
    expect(result.stdout).toMatch(/SUCCESS: 9 rules found/);
  });

  it("fires each alert on series that mean it, and stays quiet on series that do not (promtool test rules)", async () => {
    const { rule, alerts } = await renderedKit();
    const dir = mkdtempSync(join(tmpdir(), "th-rule-tests-"));
    writeFileSync(join(dir, "rules.yaml"), stringify({ groups: rule.spec.groups }));
    const ns = 'namespace="terminal-house"';
    const runbook = (name: string) =>
      alerts.find((alert) => alert.alert === name)?.annotations.runbook_url;
    const fired = (name: string, labels: Record<string, string>, summary: string) => ({
      exp_labels: {
        severity: alerts.find((a) => a.alert === name)?.labels.severity,
        team: "data-platform",
        ...labels,
      },
      exp_annotations: { summary, runbook_url: runbook(name) },
    });
    const tests = {
      rule_files: ["rules.yaml"],
      evaluation_interval: "1m",
      tests: [
        {
          interval: "1m",
          input_series: [
            { series: `th_ready{${ns},service="gateway",pod="gw-1"}`, values: "1 0x15" },
            { series: `th_ready{${ns},service="keys",pod="keys-1"}`, values: "1x15" },
            { series: `up{${ns},job="th-matcher",service="th-matcher",pod="m-1"}`, values: "0x15" },
          ],
          alert_rule_test: [
            { eval_time: "4m", alertname: "TerminalHouseServiceNotReady", exp_alerts: [] },
            {
              eval_time: "10m",
              alertname: "TerminalHouseServiceNotReady",
              exp_alerts: [
                fired(
                  "TerminalHouseServiceNotReady",
                  { namespace: "terminal-house", service: "gateway", pod: "gw-1" },
                  "gateway pod gw-1 is not ready",
                ),
                fired(
                  "TerminalHouseServiceNotReady",
                  {
                    namespace: "terminal-house",
                    job: "th-matcher",
                    service: "th-matcher",
                    pod: "m-1",
                  },
                  "th-matcher pod m-1 is not ready",
                ),
              ],
            },
          ],
        },
        {
          interval: "1m",
          input_series: [
            // 5 of every 100 responses are 5xx, over the 2% threshold.
            {
              series: `th_http_request_duration_seconds_count{${ns},service="gateway",route="/v1/leads",status="200"}`,
              values: "0+95x30",
            },
            {
              series: `th_http_request_duration_seconds_count{${ns},service="gateway",route="/v1/leads",status="503"}`,
              values: "0+5x30",
            },
            // Another service's 5xx are not the gateway's.
            {
              series: `th_http_request_duration_seconds_count{${ns},service="matcher",route="/x",status="500"}`,
              values: "0+100x30",
            },
          ],
          alert_rule_test: [
            { eval_time: "8m", alertname: "TerminalHouseGateway5xxRate", exp_alerts: [] },
            {
              eval_time: "20m",
              alertname: "TerminalHouseGateway5xxRate",
              exp_alerts: [
                fired("TerminalHouseGateway5xxRate", {}, "5% of the gateway's responses are 5xx"),
              ],
            },
          ],
        },
        {
          interval: "1m",
          input_series: [
            // Drift that never closes, from two replicas of the ledger.
            {
              series: `th_quota_counter_drift_lead_views{${ns},service="quota-ledger",pod="l-1"}`,
              values: "3x45",
            },
            {
              series: `th_quota_counter_drift_lead_views{${ns},service="quota-ledger",pod="l-2"}`,
              values: "3x45",
            },
          ],
          alert_rule_test: [
            { eval_time: "20m", alertname: "TerminalHouseLedgerRedisDrift", exp_alerts: [] },
            {
              eval_time: "40m",
              alertname: "TerminalHouseLedgerRedisDrift",
              exp_alerts: [
                fired(
                  "TerminalHouseLedgerRedisDrift",
                  {},
                  "The Redis lead-view counters have disagreed with the quota ledger for 30 minutes (by 3 lead-views)",
                ),
              ],
            },
          ],
        },
        {
          interval: "1m",
          input_series: [
            // Reads in flight: drift that comes and goes is not drift.
            {
              series: `th_quota_counter_drift_lead_views{${ns},service="quota-ledger",pod="l-1"}`,
              values: "2 2 0 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2",
            },
          ],
          alert_rule_test: [
            { eval_time: "31m", alertname: "TerminalHouseLedgerRedisDrift", exp_alerts: [] },
          ],
        },
        {
          interval: "1m",
          input_series: [
            // Two replicas report the same growing lag of one group; another group is steady.
            {
              series: `th_consumer_lag{${ns},service="matcher",pod="m-1",group="matcher.match",topic="parcel.ingested",partition="0"}`,
              values: "2000+100x40",
            },
            {
              series: `th_consumer_lag{${ns},service="matcher",pod="m-2",group="matcher.match",topic="parcel.ingested",partition="0"}`,
              values: "2000+100x40",
            },
            {
              series: `th_consumer_lag{${ns},service="quota-ledger",pod="l-1",group="quota-ledger.ledger",topic="leadview.recorded",partition="0"}`,
              values: "5000x40",
            },
          ],
          alert_rule_test: [
            {
              eval_time: "35m",
              alertname: "TerminalHouseConsumerLagGrowing",
              exp_alerts: [
                fired(
                  "TerminalHouseConsumerLagGrowing",
                  { group: "matcher.match" },
                  "Consumer group matcher.match is 5.5k records behind and falling further behind",
                ),
              ],
            },
          ],
        },
        {
          interval: "1m",
          input_series: [
            // 70% of attempts complete across two dispatcher replicas, under the 90% floor.
            {
              series: `th_delivery_attempts_total{${ns},service="webhook-dispatcher",pod="d-1",outcome="complete",attempt="1"}`,
              values: "0+7x40",
            },
            {
              series: `th_delivery_attempts_total{${ns},service="webhook-dispatcher",pod="d-2",outcome="retrying",attempt="1"}`,
              values: "0+3x40",
            },
            // Twelve dead letters within the hour, over the ten allowed.
            {
              series: `th_delivery_attempts_total{${ns},service="webhook-dispatcher",pod="d-1",outcome="dead_letter",attempt="5"}`,
              values: "0x10 12x30",
            },
            // Every replica reports the same parked count.
            {
              series: `th_deliveries_waiting{${ns},service="webhook-dispatcher",pod="d-1",state="parked"}`,
              values: "150x40",
            },
            {
              series: `th_deliveries_waiting{${ns},service="webhook-dispatcher",pod="d-2",state="parked"}`,
              values: "150x40",
            },
            {
              series: `th_deliveries_waiting{${ns},service="webhook-dispatcher",pod="d-1",state="dead_letter"}`,
              values: "500x40",
            },
          ],
          alert_rule_test: [
            {
              eval_time: "35m",
              alertname: "TerminalHouseWebhookSuccessRateLow",
              exp_alerts: [
                fired(
                  "TerminalHouseWebhookSuccessRateLow",
                  {},
                  "Only 70% of webhook delivery attempts succeed",
                ),
              ],
            },
            {
              eval_time: "20m",
              alertname: "TerminalHouseDeadLettersRising",
              exp_alerts: [
                fired(
                  "TerminalHouseDeadLettersRising",
                  {},
                  "12 webhook deliveries went to the dead-letter queue in the last hour",
                ),
              ],
            },
            { eval_time: "20m", alertname: "TerminalHouseParkedDeliveries", exp_alerts: [] },
            {
              eval_time: "35m",
              alertname: "TerminalHouseParkedDeliveries",
              exp_alerts: [
                fired(
                  "TerminalHouseParkedDeliveries",
                  {},
                  "150 webhook deliveries are parked for quota or tier",
                ),
              ],
            },
          ],
        },
        {
          interval: "5m",
          input_series: [
            // Two dispatcher replicas measure the same table two days behind; another table is
            // on time; a third is behind for half an hour only, then caught up.
            {
              series: `th_retention_behind_seconds{${ns},service="webhook-dispatcher",pod="d-1",table="dispatcher.deliveries"}`,
              values: "172800x30",
            },
            {
              series: `th_retention_behind_seconds{${ns},service="webhook-dispatcher",pod="d-2",table="dispatcher.deliveries"}`,
              values: "172800x30",
            },
            {
              series: `th_retention_behind_seconds{${ns},service="webhook-dispatcher",pod="d-1",table="dispatcher.attempts"}`,
              values: "0x30",
            },
            {
              series: `th_retention_behind_seconds{${ns},service="matcher",pod="m-1",table="matcher.matches"}`,
              values: "200000x6 0x24",
            },
          ],
          alert_rule_test: [
            { eval_time: "50m", alertname: "TerminalHouseRetentionBehind", exp_alerts: [] },
            {
              eval_time: "90m",
              alertname: "TerminalHouseRetentionBehind",
              exp_alerts: [
                fired(
                  "TerminalHouseRetentionBehind",
                  { table: "dispatcher.deliveries" },
                  "Retention of dispatcher.deliveries is 2d 0h 0m 0s behind",
                ),
              ],
            },
          ],
        },
        {
          interval: "1m",
          input_series: [
            // Both matcher replicas sample the instance: one sees a writer held open for 25
            // minutes; the other saw one that ended after 10, within the threshold.
            {
              series: `th_match_poll_held_back_seconds{${ns},service="matcher",pod="m-1"}`,
              values: "0+60x25",
            },
            {
              series: `th_match_poll_held_back_seconds{${ns},service="matcher",pod="m-2"}`,
              values: "0+60x10 0x15",
            },
          ],
          alert_rule_test: [
            { eval_time: "18m", alertname: "TerminalHousePollsHeldBack", exp_alerts: [] },
            {
              eval_time: "25m",
              alertname: "TerminalHousePollsHeldBack",
              exp_alerts: [
                fired(
                  "TerminalHousePollsHeldBack",
                  {},
                  "A transaction open for 25m 0s holds back what polls return",
                ),
              ],
            },
          ],
        },
      ],
    };
    writeFileSync(join(dir, "tests.yaml"), stringify(tests));
    const result = await run("promtool", ["test", "rules", join(dir, "tests.yaml")]).catch(
      (error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`${error.message}\n${error.stdout}\n${error.stderr}`);
      },
    );
    expect(result.stdout).toMatch(/SUCCESS/);
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
