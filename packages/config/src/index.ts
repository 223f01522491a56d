import { z } from "zod";
import { devDefaultProblems } from "./dev-defaults.ts";
import { httpServerSettingProblems, httpServerShape } from "./http-server.ts";
import {
  devInternalCallerKeys,
  type InternalCallerName,
  internalCallerKeys,
} from "./internal-signing.ts";
import { kafkaSettingProblems, kafkaShape } from "./kafka.ts";
import { keyPeppersOf, keyPeppersSetting } from "./key-peppers.ts";

export { type HttpServerSettings, httpServerShape } from "./http-server.ts";
export {
  DEV_INTERNAL_SIGNING_SECRETS,
  INTERNAL_CALLERS,
  type InternalCallerName,
  internalCallerKey,
  internalSigningSecret,
  parseInternalCallerKeys,
} from "./internal-signing.ts";
export {
  type KafkaConnection,
  kafkaConnection,
  kafkaSettingProblems,
  kafkaShape,
  SASL_MECHANISMS,
  type SaslMechanism,
  Secret,
  securityProtocolOf,
} from "./kafka.ts";
export {
  type KeyPepper,
  type KeyPeppers,
  keyPeppersOf,
  parseKeyPeppers,
} from "./key-peppers.ts";
export { z };

/** Thrown once at start-up when the environment does not satisfy a service's config schema. */
export class ConfigError extends Error {
  readonly issues: readonly { variable: string; reason: string }[];

  constructor(issues: readonly { variable: string; reason: string }[]) {
    super(
      `invalid configuration: ${issues.map((issue) => `${issue.variable}: ${issue.reason}`).join("; ")}`,
    );
    this.name = "ConfigError";
    this.issues = issues;
  }
}

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Declares a service's configuration as one zod object keyed by environment variable names.
 * `load` parses the whole environment once and fails fast naming every bad variable, and in
 * production refuses any of `devDefaults` (secrets whose default is for development only);
 * services pass the result down instead of reading `process.env` anywhere else.
 */
export function defineConfig<Shape extends z.ZodRawShape>(
  shape: Shape,
  options: { devDefaults?: Record<string, string> } = {},
) {
  // Settings that are only wrong together (a SASL mechanism without a password) are judged once
  // every variable parsed on its own.
  const schema = z.object(shape).superRefine((data, ctx) => {
    if ("HTTP_HEADERS_TIMEOUT_MS" in shape) {
      for (const problem of httpServerSettingProblems(
        data as Parameters<typeof httpServerSettingProblems>[0],
      )) {
        ctx.addIssue({ code: "custom", path: [problem.variable], message: problem.reason });
      }
    }
    if (!("KAFKA_BROKERS" in shape)) {
      return;
    }
    for (const problem of kafkaSettingProblems(
      data as Parameters<typeof kafkaSettingProblems>[0],
    )) {
      ctx.addIssue({ code: "custom", path: [problem.variable], message: problem.reason });
    }
  });
  return {
    schema,
    /** Parses the environment (the process's unless given), the one read of it a service makes. */
    load(env: Environment = process.env): z.infer<typeof schema> {
      // Empty strings mean "unset" so that `FOO= npm start` falls back to the default.
      const present = Object.fromEntries(
        Object.entries(env).filter(([, value]) => value !== undefined && value !== ""),
      );
      const parsed = schema.safeParse(present);
      if (!parsed.success) {
        throw new ConfigError(
          parsed.error.issues.map((issue) => ({
            variable: issue.path.map(String).join(".") || "(environment)",
            reason: issue.message,
          })),
        );
      }
      if (options.devDefaults) {
        refuseDevDefaultsInProduction(
          parsed.data as { NODE_ENV: string } & Record<string, unknown>,
          options.devDefaults,
        );
      }
      return parsed.data;
    },
  };
}

/**
 * Runs a process's one config read; a bad environment ends the process with one line on stderr
 * (each variable and why) and exit code 1, not a stack trace.
 */
export function configOrExit<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof ConfigError)) {
      throw error;
    }
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

/** Variable types shared by every service, so `PORT=abc` reads the same everywhere. */
export const vars = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65_535).default(fallback),
  positiveInt: (fallback: number) => z.coerce.number().int().positive().default(fallback),
  url: (protocols: readonly string[]) =>
    z.url().refine((value) => protocols.some((protocol) => value.startsWith(`${protocol}:`)), {
      message: `must be a URL starting with ${protocols.map((p) => `${p}:`).join(" or ")}`,
    }),
  /** Interface to listen on; containers need all interfaces. */
  host: () => z.string().min(1).default("0.0.0.0"),
  flag: (fallback: boolean) => z.stringbool().default(fallback),
  logLevel: () =>
    z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** 32 bytes as 64 hex characters or base64: keys for HMAC peppers and AES-256. */
  secretKey: () =>
    z.string().refine((value) => decodeKey(value) !== undefined, {
      message: "must be 32 bytes, written as 64 hex characters or base64",
    }),
  /** The API-key pepper: one key (version 1) or `version:key` pairs, the current first. */
  keyPeppers: keyPeppersSetting,
};

export function decodeKey(value: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(value)) {
    return Buffer.from(value, "hex");
  }
  const decoded = Buffer.from(value, "base64");
  return decoded.length === 32 ? decoded : undefined;
}

/** The current API-key pepper as bytes: the one new key hashes are made with. */
export function pepperOf(config: { KEY_PEPPER: string }): Buffer {
  return keyPeppersOf(config).current.key;
}

/**
 * The settings every service shares, Postgres aside: Redis, broker, logging, telemetry,
 * deployment mode. A service that keeps no database (the gateway) declares these alone.
 */
export const baseShape = {
  /** `production` refuses development conveniences (plain-HTTP webhooks, default secrets). */
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  LOG_LEVEL: vars.logLevel(),
  REDIS_URL: vars.url(["redis", "rediss"]).default("redis://127.0.0.1:6379"),
  /** Bootstrap brokers, TLS and SASL: see kafka.ts (unset means the dev broker on :9092). */
  ...kafkaShape,
  /** Port of /healthz and /readyz, kept off the public port so probes never meet auth. */
  INTERNAL_PORT: vars.port(0),
  /** How long every HTTP server waits on a slow client: see http-server.ts. */
  ...httpServerShape,
  OTEL_ENABLED: vars.flag(false),
  OTEL_EXPORTER_OTLP_ENDPOINT: vars.url(["http", "https"]).optional(),
  OTEL_SERVICE_NAME: z.string().optional(),
};

/** The settings of a service that owns a Postgres schema: the shared ones and its database. */
export const commonShape = {
  ...baseShape,
  DATABASE_URL: vars
    .url(["postgres", "postgresql"])
    .default("postgres://postgres:postgres@127.0.0.1:5432/postgres"),
};

/** A service that answers internal calls: its name and the callers it accepts. */
export interface InternalReceiver {
  service: string;
  callers: readonly InternalCallerName[];
}

/**
 * What every service that listens shares beyond `commonShape`: its public and internal ports,
 * the interface it listens on and the keys of the callers its internal API accepts.
 */
export function serviceShape(options: { port: number; internalPort: number } & InternalReceiver) {
  return {
    ...commonShape,
    PORT: vars.port(options.port),
    INTERNAL_PORT: vars.port(options.internalPort),
    HOST: vars.host(),
    /** `caller:key` per calling service: the key derived from its signing root for this service. */
    INTERNAL_CALLER_KEYS: internalCallerKeys(options.service, options.callers),
  };
}

/** A receiver's development defaults beyond `DEV_SECRETS`, refused in production like them. */
export function receiverDevDefaults(receiver: InternalReceiver): { INTERNAL_CALLER_KEYS: string } {
  return { INTERNAL_CALLER_KEYS: devInternalCallerKeys(receiver.service, receiver.callers) };
}

/**
 * Secrets with a development default must be set explicitly in production: running production
 * on a default that sits in the repository would be no secret at all.
 */
export function refuseDevDefaultsInProduction(
  config: { NODE_ENV: string } & Record<string, unknown>,
  devDefaults: Record<string, string>,
): void {
  if (config.NODE_ENV !== "production") {
    return;
  }
  // Anywhere in any setting: a list can carry a default among real values (dev-defaults.ts).
  const issues = devDefaultProblems(config, devDefaults);
  if (issues.length > 0) {
    throw new ConfigError(issues);
  }
}

/** Development-only defaults of shared secrets, refused in production. */
export const DEV_SECRETS = {
  KEY_PEPPER: "61e62808789f523d6f1ad8784ca8977b32142e12a85763674e177f323d621106",
} as const;
