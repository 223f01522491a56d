import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// The dev broker's test-time PKI; this package has no dependency to reach it by name.
import {
  makeTestCertificates,
  type TestCertificates,
} from "../../dev-broker/src/test-support/certs.ts";
import {
  ConfigError,
  commonShape,
  defineConfig,
  kafkaConnection,
  securityProtocolOf,
} from "./index.ts";

const config = defineConfig(commonShape);
let pki: TestCertificates;

beforeAll(async () => {
  pki = makeTestCertificates();
});

afterAll(async () => {
  pki?.remove();
});

/** The one line a bad environment gives, or undefined when it loads. */
function failureOf(env: Record<string, string>): string | undefined {
  try {
    config.load(env);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
}

describe("Kafka connection settings", () => {
  it("default to plaintext without SASL against the dev broker", () => {
    const connection = kafkaConnection(config.load({}));
    expect(connection).toEqual({ brokers: ["127.0.0.1:9092"] });
    expect(securityProtocolOf(connection)).toBe("PLAINTEXT");
  });

  it("read SASL_SSL with a CA bundle, mutual TLS, a server name and a password file", async () => {
    const passwordFile = join(pki.dir, "password");
    await writeFile(passwordFile, "s3cret-from-file\n");
    const connection = kafkaConnection(
      config.load({
        KAFKA_BROKERS: "b-1.kafka.example:9096,b-2.kafka.example:9096",
        KAFKA_TLS: "true",
        KAFKA_TLS_CA_FILE: pki.caFile,
        KAFKA_TLS_CERT_FILE: pki.clientCertFile,
        KAFKA_TLS_KEY_FILE: pki.clientKeyFile,
        KAFKA_TLS_SERVERNAME: "kafka.example",
        KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
        KAFKA_SASL_USERNAME: "ingest",
        KAFKA_SASL_PASSWORD_FILE: passwordFile,
      }),
    );
    expect(connection.brokers).toEqual(["b-1.kafka.example:9096", "b-2.kafka.example:9096"]);
    expect(connection.tls?.ca?.toString() === pki.ca).toBe(true);
    expect(connection.tls?.cert?.toString() === pki.clientCert).toBe(true);
    expect(connection.tls?.key?.toString() === pki.clientKey).toBe(true);
    expect(connection.tls?.servername).toBe("kafka.example");
    // The mechanism is taken in Kafka's spelling too; the file's trailing newline is not part of it.
    expect(connection.sasl).toEqual({
      mechanism: "scram-sha-512",
      username: "ingest",
      password: "s3cret-from-file",
    });
    expect(securityProtocolOf(connection)).toBe("SASL_SSL");
  });

  it("refuse a bad combination in one line naming the setting and the cause", () => {
    const cases: [Record<string, string>, string][] = [
      [
        { KAFKA_SASL_MECHANISM: "gssapi" },
        "KAFKA_SASL_MECHANISM: must be one of plain, scram-sha-256, scram-sha-512",
      ],
      [
        { KAFKA_SASL_MECHANISM: "scram-sha-256", KAFKA_SASL_USERNAME: "u" },
        "KAFKA_SASL_PASSWORD: must be set (or KAFKA_SASL_PASSWORD_FILE) when KAFKA_SASL_MECHANISM is set",
      ],
      [
        { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_PASSWORD: "p" },
        "KAFKA_SASL_USERNAME: must be set when KAFKA_SASL_MECHANISM is set",
      ],
      [{ KAFKA_SASL_USERNAME: "u", KAFKA_SASL_PASSWORD: "p" }, "KAFKA_SASL_MECHANISM: must be set"],
      [
        { KAFKA_TLS: "true", KAFKA_TLS_CERT_FILE: pki.clientCertFile },
        "KAFKA_TLS_KEY_FILE: must be set with KAFKA_TLS_CERT_FILE",
      ],
      [
        { KAFKA_TLS: "true", KAFKA_TLS_KEY_FILE: pki.clientKeyFile },
        "KAFKA_TLS_CERT_FILE: must be set with KAFKA_TLS_KEY_FILE",
      ],
      [
        {
          KAFKA_TLS: "true",
          KAFKA_TLS_CERT_FILE: pki.clientCertFile,
          KAFKA_TLS_KEY_FILE: pki.serverKeyFile,
        },
        `KAFKA_TLS_KEY_FILE: ${pki.serverKeyFile} is not the key of the certificate`,
      ],
      [{ KAFKA_TLS_CA_FILE: pki.caFile }, "KAFKA_TLS: must be true when KAFKA_TLS_CA_FILE is set"],
      [
        { KAFKA_TLS: "true", KAFKA_TLS_CA_FILE: "/nonexistent/ca.pem" },
        "KAFKA_TLS_CA_FILE: cannot read /nonexistent/ca.pem (ENOENT)",
      ],
      [
        { KAFKA_TLS: "true", KAFKA_TLS_CA_FILE: pki.clientKeyFile },
        `KAFKA_TLS_CA_FILE: ${pki.clientKeyFile} holds no PEM certificate`,
      ],
      [
        {
          KAFKA_TLS: "true",
          KAFKA_TLS_CERT_FILE: pki.clientCertFile,
          KAFKA_TLS_KEY_FILE: pki.caFile,
        },
        `KAFKA_TLS_KEY_FILE: ${pki.caFile} holds no unencrypted PEM private key`,
      ],
      [{ KAFKA_TLS: "maybe" }, "KAFKA_TLS: must be true or false"],
      [
        {
          KAFKA_SASL_MECHANISM: "plain",
          KAFKA_SASL_USERNAME: "u",
          KAFKA_SASL_PASSWORD: "p",
          KAFKA_SASL_PASSWORD_FILE: pki.caFile,
        },
        "KAFKA_SASL_PASSWORD: set it or KAFKA_SASL_PASSWORD_FILE, not both",
      ],
      [
        {
          NODE_ENV: "production",
          KAFKA_SASL_MECHANISM: "plain",
          KAFKA_SASL_USERNAME: "u",
          KAFKA_SASL_PASSWORD: "p",
        },
        "KAFKA_TLS: must be true in production with KAFKA_SASL_MECHANISM=plain",
      ],
    ];
    for (const [env, expected] of cases) {
      const line = failureOf(env);
      expect(line, JSON.stringify(env)).toContain(expected);
      expect(line).not.toContain("\n");
    }
  });

  it("never shows the password or the private key when the config is logged or inspected", () => {
    const loaded = config.load({
      KAFKA_TLS: "true",
      KAFKA_TLS_CERT_FILE: pki.clientCertFile,
      KAFKA_TLS_KEY_FILE: pki.clientKeyFile,
      KAFKA_SASL_MECHANISM: "plain",
      KAFKA_SASL_USERNAME: "u",
      KAFKA_SASL_PASSWORD: "hunter2-in-config",
    });
    const keyBody = pki.clientKey.split("\n")[1] as string;
    for (const shown of [
      JSON.stringify(loaded),
      inspect(loaded, { depth: 10 }),
      String(loaded.KAFKA_SASL_PASSWORD),
    ]) {
      expect(shown).not.toContain("hunter2-in-config");
      expect(shown).not.toContain(keyBody);
    }
    const line = failureOf({
      KAFKA_SASL_MECHANISM: "nope",
      KAFKA_SASL_USERNAME: "u",
      KAFKA_SASL_PASSWORD: "hunter2-in-config",
    });
    expect(line).not.toContain("hunter2-in-config");
  });
});
