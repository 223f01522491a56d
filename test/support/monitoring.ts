// The chart's operator's kit as rendered: the PrometheusRule's alerts and the Grafana dashboard's
// queries, and the metric names they read.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { helmBinary } from "./helm.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..", "..");
export const chart = join(root, "deploy", "helm", "terminal-house");
const ciValues = join(chart, "ci", "ci-values.yaml");

export interface RenderedManifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered YAML, checked by the tests
  spec?: any;
  data?: Record<string, string>;
}

interface Alert {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export async function renderChart(...extra: string[]): Promise<RenderedManifest[]> {
  const { stdout } = await run(
    helmBinary(),
    ["template", "th", chart, "--namespace", "terminal-house", "-f", ciValues, ...extra],
    { maxBuffer: 32 * 1024 * 1024 },
  );
  return parseAllDocuments(stdout)
    .map((document) => document.toJS() as RenderedManifest | null)
    .filter((manifest): manifest is RenderedManifest => manifest !== null);
}

export async function renderedKit() {
  const manifests = await renderChart();
  const rule = manifests.find((manifest) => manifest.kind === "PrometheusRule");
  const dashboardMap = manifests.find(
    (manifest) => manifest.kind === "ConfigMap" && manifest.metadata.name === "th-dashboard",
  );
  if (!rule || !dashboardMap?.data) {
    throw new Error("the CI values render no PrometheusRule or dashboard ConfigMap");
  }
  const alerts = (rule.spec.groups as { rules: Alert[] }[]).flatMap((group) => group.rules);
  const dashboard = JSON.parse(dashboardMap.data["terminal-house.json"] ?? "{}") as {
    panels: { type: string; title: string; targets?: { expr: string }[] }[];
    templating: { list: { query: unknown }[] };
  };
  const panelQueries = dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
  );
  return { manifests, rule, alerts, dashboardMap, dashboard, panelQueries };
}

/** The metric names a PromQL expression reads (the project's th_* series and Prometheus's up). */
export function metricNames(expr: string): string[] {
  const names = new Set<string>();
  for (const match of expr.matchAll(/\b(th_[a-z0-9_]+|up)\s*[{[]/g)) {
    names.add(match[1] as string);
  }
  for (const match of expr.matchAll(/label_values\((th_[a-z0-9_]+)/g)) {
    names.add(match[1] as string);
  }
  return [...names];
}
