import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { inspect } from "node:util";
import { z } from "zod";

/**
 * The one Kafka connection setting of a process: bootstrap brokers, TLS and SASL, as environment
 * variables checked together at start-up. Files (CA bundle, client certificate and key, password)
 * are read here once, so an unreadable or mismatched one stops the process before any connection
 * is tried, in one line naming the variable.
 */

export const SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512"] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/**
 * A value that must never reach a log line, an error or a metrics label: it prints as
 * `[redacted]` through `String`, JSON and `util.inspect` (what pino and console use).
 */
export class Secret<T> {
  readonly #value: T;

  constructor(value: T) {
    this.#value = value;
  }

  reveal(): T {
    return this.#value;
  }

  toString() {
    return "[redacted]";
  }

  toJSON() {
    return "[redacted]";
  }

  [inspect.custom]() {
    return "[redacted]";
  }
}

/** What a Kafka client needs to connect; the shape the bus takes. */
export interface KafkaConnection {
  brokers: string[];
  tls?: {
    /** PEM CA bundle to trust; Node's public CA store when absent. */
    ca?: Buffer;
    /** PEM client certificate and key for mutual TLS. */
    cert?: Buffer;
    key?: Buffer;
    /** Name the brokers' certificates must carry (and SNI); each broker's host when absent. */
    servername?: string;
  };
  sasl?: { mechanism: SaslMechanism; username: string; password: string };
}

interface PemFile {
  path: string;
  contents: Buffer;
}

function readable(check?: (contents: Buffer) => string | undefined) {
  return z.string().transform((path, ctx): PemFile => {
    let contents: Buffer;
    try {
      contents = readFileSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
      ctx.addIssue({ code: "custom", message: `cannot read ${path} (${code})` });
      return z.NEVER;
    }
    const problem = contents.length === 0 ? "is empty" : check?.(contents);
    if (problem) {
      ctx.addIssue({ code: "custom", message: `${path} ${problem}` });
      return z.NEVER;
    }
    return { path, contents };
  });
}

function certificatesIn(contents: Buffer): X509Certificate[] {
  const blocks =
    contents
      .toString("utf8")
      .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new X509Certificate(block));
}

function checkCertificates(contents: Buffer): string | undefined {
  try {
    return certificatesIn(contents).length === 0
      ? "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
      : undefined;
  } catch {
    return "holds a certificate that cannot be parsed";
  }
}

function privateKeyOf(contents: Buffer): KeyObject | undefined {
  try {
    return createPrivateKey(contents);
  } catch {
    return undefined;
  }
}

/** The Kafka variables every service shares (`baseShape`). */
export const kafkaShape = {
  /** Comma-separated bootstrap host:port list; unset means the dev broker on localhost:9092. */
  KAFKA_BROKERS: z
    .string()
    .transform((value) =>
      value
        .split(",")
        .map((item) => item.trim())
        .filter(Boolean),
    )
    .refine((items) => items.length > 0 && items.every((item) => /^[^\s:]+:\d+$/.test(item)), {
      message: "must be a comma-separated list of host:port",
    })
    .default(["127.0.0.1:9092"]),
  KAFKA_TLS: z.stringbool({ error: "must be true or false" }).default(false),
  KAFKA_TLS_CA_FILE: readable(checkCertificates).optional(),
  KAFKA_TLS_CERT_FILE: readable(checkCertificates).optional(),
  KAFKA_TLS_KEY_FILE: readable((contents) =>
    privateKeyOf(contents) ? undefined : "holds no unencrypted PEM private key",
  )
    .transform((file) => new Secret(file))
    .optional(),
  KAFKA_TLS_SERVERNAME: z.string().min(1).optional(),
  KAFKA_SASL_MECHANISM: z
    .string()
    .transform((value) => value.toLowerCase())
    .pipe(z.enum(SASL_MECHANISMS, { error: `must be one of ${SASL_MECHANISMS.join(", ")}` }))
    .optional(),
  KAFKA_SASL_USERNAME: z.string().min(1).optional(),
  KAFKA_SASL_PASSWORD: z
    .string()
    .transform((value) => new Secret(value))
    .optional(),
  KAFKA_SASL_PASSWORD_FILE: readable()
    .transform(({ contents }) => new Secret(contents.toString("utf8").replace(/\r?\n$/, "")))
    .optional(),
};

type KafkaSettings = {
  NODE_ENV?: string;
  KAFKA_BROKERS: string[];
  KAFKA_TLS: boolean;
  KAFKA_TLS_CA_FILE?: PemFile | undefined;
  KAFKA_TLS_CERT_FILE?: PemFile | undefined;
  KAFKA_TLS_KEY_FILE?: Secret<PemFile> | undefined;
  KAFKA_TLS_SERVERNAME?: string | undefined;
  KAFKA_SASL_MECHANISM?: SaslMechanism | undefined;
  KAFKA_SASL_USERNAME?: string | undefined;
  KAFKA_SASL_PASSWORD?: Secret<string> | undefined;
  KAFKA_SASL_PASSWORD_FILE?: Secret<string> | undefined;
};

/** The combinations no single variable can judge; each problem names the variable to fix. */
export function kafkaSettingProblems(
  settings: KafkaSettings,
): { variable: string; reason: string }[] {
  const problems: { variable: string; reason: string }[] = [];
  const add = (variable: string, reason: string) => problems.push({ variable, reason });
  if (!settings.KAFKA_TLS) {
    for (const variable of [
      "KAFKA_TLS_CA_FILE",
      "KAFKA_TLS_CERT_FILE",
      "KAFKA_TLS_KEY_FILE",
      "KAFKA_TLS_SERVERNAME",
    ] as const) {
      if (settings[variable] !== undefined) {
        add("KAFKA_TLS", `must be true when ${variable} is set`);
      }
    }
  }
  const cert = settings.KAFKA_TLS_CERT_FILE;
  const key = settings.KAFKA_TLS_KEY_FILE?.reveal();
  if (cert && !key) {
    add("KAFKA_TLS_KEY_FILE", "must be set with KAFKA_TLS_CERT_FILE (mutual TLS needs both)");
  } else if (key && !cert) {
    add("KAFKA_TLS_CERT_FILE", "must be set with KAFKA_TLS_KEY_FILE (mutual TLS needs both)");
  } else if (cert && key) {
    const leaf = certificatesIn(cert.contents)[0];
    const privateKey = privateKeyOf(key.contents);
    if (leaf && privateKey && !leaf.checkPrivateKey(privateKey)) {
      add("KAFKA_TLS_KEY_FILE", `${key.path} is not the key of the certificate in ${cert.path}`);
    }
  }
  const password = settings.KAFKA_SASL_PASSWORD ?? settings.KAFKA_SASL_PASSWORD_FILE;
  if (settings.KAFKA_SASL_PASSWORD && settings.KAFKA_SASL_PASSWORD_FILE) {
    add("KAFKA_SASL_PASSWORD", "set it or KAFKA_SASL_PASSWORD_FILE, not both");
  }
  if (settings.KAFKA_SASL_MECHANISM) {
    if (!settings.KAFKA_SASL_USERNAME) {
      add("KAFKA_SASL_USERNAME", `must be set when KAFKA_SASL_MECHANISM is set`);
    }
    if (!password || password.reveal() === "") {
      add(
        "KAFKA_SASL_PASSWORD",
        "must be set (or KAFKA_SASL_PASSWORD_FILE) when KAFKA_SASL_MECHANISM is set",
      );
    }
    // PLAIN sends the password as it is; over plaintext anyone on the path could read it.
    if (
      settings.NODE_ENV === "production" &&
      settings.KAFKA_SASL_MECHANISM === "plain" &&
      !settings.KAFKA_TLS
    ) {
      add("KAFKA_TLS", "must be true in production with KAFKA_SASL_MECHANISM=plain");
    }
  } else if (settings.KAFKA_SASL_USERNAME || password) {
    add(
      "KAFKA_SASL_MECHANISM",
      "must be set (plain, scram-sha-256 or scram-sha-512) when a SASL user or password is",
    );
  }
  return problems;
}

/** The connection a loaded config describes, for the bus (the only Kafka client). */
export function kafkaConnection(settings: KafkaSettings): KafkaConnection {
  const connection: KafkaConnection = { brokers: [...settings.KAFKA_BROKERS] };
  if (settings.KAFKA_TLS) {
    const tls: NonNullable<KafkaConnection["tls"]> = {};
    if (settings.KAFKA_TLS_CA_FILE) {
      tls.ca = settings.KAFKA_TLS_CA_FILE.contents;
    }
    if (settings.KAFKA_TLS_CERT_FILE) {
      tls.cert = settings.KAFKA_TLS_CERT_FILE.contents;
    }
    const key = settings.KAFKA_TLS_KEY_FILE?.reveal();
    if (key) {
      tls.key = key.contents;
    }
    if (settings.KAFKA_TLS_SERVERNAME) {
      tls.servername = settings.KAFKA_TLS_SERVERNAME;
    }
    connection.tls = tls;
  }
  const password = settings.KAFKA_SASL_PASSWORD ?? settings.KAFKA_SASL_PASSWORD_FILE;
  if (settings.KAFKA_SASL_MECHANISM && settings.KAFKA_SASL_USERNAME && password) {
    connection.sasl = {
      mechanism: settings.KAFKA_SASL_MECHANISM,
      username: settings.KAFKA_SASL_USERNAME,
      password: password.reveal(),
    };
  }
  return connection;
}

/** `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`: Kafka's name for what a connection uses. */
export function securityProtocolOf(connection: KafkaConnection): string {
  if (connection.sasl) {
    return connection.tls ? "SASL_SSL" : "SASL_PLAINTEXT";
  }
  return connection.tls ? "SSL" : "PLAINTEXT";
}
