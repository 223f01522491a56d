// TLS, mutual TLS and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) on the dev broker, checked
// with kafkajs and with kcat (librdkafka), neither of them written by this project.
import { execFile, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Kafka, type KafkaConfig, logLevel, type SASLOptions } from "kafkajs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RequestLogEntry } from "./apis/types.ts";
import { type RunningBroker, startBroker } from "./index.ts";
import { Reader } from "./protocol/reader.ts";
import type { SecurityProtocol } from "./security/listener.ts";
import type { SaslMechanism } from "./security/sasl.ts";
import {
  makeTestCertificates,
  opensslAvailable,
  type TestCertificates,
} from "./test-support/certs.ts";
import { type ChildBroker, spawnCliBroker } from "./test-support/child-broker.ts";
import { FAST_CONSUMER, uniqueName, waitFor } from "./test-support/kafka.ts";
import { kafkajsProtocol, RawClient } from "./test-support/raw-client.ts";

const run = promisify(execFile);
const kcatAvailable = spawnSync("kcat", ["-V"]).status === 0;
if (!kcatAvailable) {
  console.warn("kcat security tests skipped: `kcat` is not installed (apt-get install -y kcat)");
}
if (!opensslAvailable) {
  console.warn("TLS tests skipped: the `openssl` CLI is not installed");
}

const USERS = { alice: "alice-secret", "bob,the=builder": "p@ss:with:colons" };
const MECHANISMS: readonly SaslMechanism[] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

let certs: TestCertificates;
beforeAll(() => {
  if (opensslAvailable) {
    certs = makeTestCertificates();
  }
});
afterAll(() => {
  certs?.remove();
});

function client(
  broker: RunningBroker,
  extra: Pick<KafkaConfig, "ssl" | "sasl"> = {},
  retries = 5,
): Kafka {
  return new Kafka({
    clientId: uniqueName("secure-client"),
    brokers: broker.brokers,
    logLevel: logLevel.NOTHING,
    retry: { initialRetryTime: 100, retries },
    // Generous: TLS handshakes on a loaded test machine can be slow.
    connectionTimeout: 10_000,
    ...extra,
  });
}

/** Creates a topic, produces one message and reads it back through a consumer group. */
async function roundTrip(kafka: Kafka): Promise<string> {
  const admin = kafka.admin();
  await admin.connect();
  const topic = uniqueName("secure");
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: [{ key: "k", value: "over the wire" }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: uniqueName("secure-group"), ...FAST_CONSUMER });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let received: string | null = null;
  await consumer.run({
    eachMessage: async ({ message }) => {
      received = message.value?.toString() ?? null;
    },
  });
  await waitFor(() => received !== null, 10_000, "the message to be consumed");
  await consumer.disconnect();
  return received as unknown as string;
}

function sasl(mechanism: SaslMechanism, username: string, password: string): SASLOptions {
  return { mechanism: mechanism.toLowerCase(), username, password } as SASLOptions;
}

describe.skipIf(!opensslAvailable)("SASL listeners with kafkajs", () => {
  for (const protocol of ["SASL_PLAINTEXT", "SASL_SSL"] as const satisfies SecurityProtocol[]) {
    describe(protocol, () => {
      let broker: RunningBroker;
      const seen: RequestLogEntry[] = [];
      beforeAll(async () => {
        broker = await startBroker({
          port: 0,
          minSessionTimeoutMs: 100,
          securityProtocol: protocol,
          sasl: { users: USERS },
          ...(protocol === "SASL_SSL"
            ? { tls: { key: certs.serverKey, cert: certs.serverCert } }
            : {}),
          onRequest: (entry) => seen.push(entry),
        });
      });
      afterAll(async () => {
        await broker?.stop();
      });
      const ssl = () => (protocol === "SASL_SSL" ? { ssl: { ca: [certs.ca] } } : {});

      for (const mechanism of MECHANISMS) {
        test(`kafkajs produces and consumes with ${mechanism}`, async () => {
          const kafka = client(broker, { ...ssl(), sasl: sasl(mechanism, "alice", USERS.alice) });
          expect(await roundTrip(kafka)).toBe("over the wire");
          const produced = seen.filter((e) => e.apiKey === 0);
          expect(produced.at(-1)?.principal).toBe("User:alice");
        });
      }

      test("a user name with ',' and '=' authenticates with SCRAM (saslname escaping)", async () => {
        const kafka = client(broker, {
          ...ssl(),
          sasl: sasl("SCRAM-SHA-256", "bob,the=builder", USERS["bob,the=builder"]),
        });
        const admin = kafka.admin();
        await admin.connect();
        await admin.listTopics();
        await admin.disconnect();
        expect(seen.at(-1)?.principal).toBe("User:bob,the=builder");
      });

      for (const mechanism of ["PLAIN", "SCRAM-SHA-512"] as const) {
        test(`a wrong password is refused with SASL_AUTHENTICATION_FAILED (${mechanism})`, async () => {
          const failedBefore = broker.stats.failedAuthentications;
          const kafka = client(broker, { ...ssl(), sasl: sasl(mechanism, "alice", "wrong") });
          const admin = kafka.admin();
          const started = Date.now();
          const error = await admin.connect().then(
            () => null,
            (e: Error) => e,
          );
          expect(error?.name).toBe("KafkaJSSASLAuthenticationError");
          expect(error?.message).toContain(
            mechanism === "PLAIN"
              ? "Authentication failed: Invalid username or password"
              : "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
          );
          // No hang; and the count below shows one attempt: kafkajs does not retry the refusal.
          expect(Date.now() - started).toBeLessThan(10_000);
          expect(broker.stats.failedAuthentications).toBe(failedBefore + 1);
          await admin.disconnect();
        });
      }

      test("an unknown user is refused like a wrong password", async () => {
        const kafka = client(broker, { ...ssl(), sasl: sasl("SCRAM-SHA-256", "mallory", "x") });
        const admin = kafka.admin();
        await expect(admin.connect()).rejects.toThrow(
          "invalid credentials with SASL mechanism SCRAM-SHA-256",
        );
        await admin.disconnect();
      });

      test("a client without SASL gets no answer to Metadata: the broker closes the connection", async () => {
        const kafka = client(broker, ssl(), 0);
        const admin = kafka.admin();
        // ApiVersions is allowed before authentication; the Metadata request after it is not.
        await expect(admin.connect().then(() => admin.listTopics())).rejects.toThrow(/closed/i);
        await admin.disconnect();
      });
    });
  }
});

describe("SASL state machine on the wire", () => {
  let broker: RunningBroker;
  beforeAll(async () => {
    broker = await startBroker({
      port: 0,
      securityProtocol: "SASL_PLAINTEXT",
      sasl: { mechanisms: ["SCRAM-SHA-512", "PLAIN"], users: USERS },
    });
  });
  afterAll(async () => {
    await broker.stop();
  });

  test("a request before authentication is refused: the connection closes without an answer", async () => {
    const raw = await RawClient.connect(broker.port);
    const metadata = kafkajsProtocol("metadata", 4);
    await raw.send(metadata.request({ topics: [], allowAutoTopicCreation: false }));
    await expect(raw.nextResponse()).rejects.toThrow("connection closed");
  });

  test("before authentication a frame above 512 KiB closes the connection (Kafka's sasl.server.max.receive.size)", async () => {
    const raw = await RawClient.connect(broker.port);
    const size = Buffer.alloc(4);
    size.writeInt32BE(512 * 1024 + 1);
    raw.writeBytes(size);
    await waitFor(() => raw.closed, 2000, "the broker to close the connection");
  });

  test("ApiVersions is answered before authentication and lists the SASL APIs", async () => {
    const raw = await RawClient.connect(broker.port);
    const { request, response } = kafkajsProtocol("apiVersions", 2);
    const decoded = await raw.roundTrip<{
      apiVersions: Array<{ apiKey: number; minVersion: number; maxVersion: number }>;
    }>(request({}), response);
    expect(decoded.apiVersions).toContainEqual({ apiKey: 17, minVersion: 0, maxVersion: 1 });
    expect(decoded.apiVersions).toContainEqual({ apiKey: 36, minVersion: 0, maxVersion: 1 });
    // Still unauthenticated: anything else now closes the connection.
    const metadata = kafkajsProtocol("metadata", 4);
    await raw.send(metadata.request({ topics: [], allowAutoTopicCreation: false }));
    await expect(raw.nextResponse()).rejects.toThrow("connection closed");
  });

  test("after a successful handshake only SaslAuthenticate is accepted", async () => {
    const raw = await RawClient.connect(broker.port);
    const handshake = kafkajsProtocol("saslHandshake", 1);
    const result = await raw.roundTrip<{ enabledMechanisms: string[] }>(
      handshake.request({ mechanism: "PLAIN" }),
      handshake.response,
    );
    expect(result.enabledMechanisms).toEqual(["SCRAM-SHA-512", "PLAIN"]);
    const metadata = kafkajsProtocol("metadata", 4);
    await raw.send(metadata.request({ topics: [], allowAutoTopicCreation: false }));
    await expect(raw.nextResponse()).rejects.toThrow("connection closed");
  });

  test("SaslHandshake v0 followed by a bare PLAIN token authenticates (the pre-SaslAuthenticate exchange)", async () => {
    const raw = await RawClient.connect(broker.port);
    raw.sendRaw(17, 0, Buffer.from([0x00, 0x05, ...Buffer.from("PLAIN")]));
    expect((await raw.nextResponse()).body.readInt16BE(0)).toBe(0);
    const token = Buffer.from("\u0000alice\u0000alice-secret");
    const size = Buffer.alloc(4);
    size.writeInt32BE(token.length);
    raw.writeBytes(Buffer.concat([size, token]));
    expect((await raw.nextFrame()).length).toBe(0);
    const metadata = kafkajsProtocol("metadata", 4);
    const answer = await raw.roundTrip<{ brokers: unknown[] }>(
      metadata.request({ topics: [], allowAutoTopicCreation: false }),
      metadata.response,
    );
    expect(answer.brokers).toHaveLength(1);
    raw.close();
  });

  test("an unsupported mechanism gets UNSUPPORTED_SASL_MECHANISM with the enabled list, then a close", async () => {
    const raw = await RawClient.connect(broker.port);
    const body = Buffer.from([0x00, 0x06, ...Buffer.from("GSSAPI")]);
    raw.sendRaw(17, 1, body);
    const answer = await raw.nextResponse();
    const r = new Reader(answer.body);
    expect(r.int16()).toBe(33);
    expect(r.array((x) => x.string())).toEqual(["SCRAM-SHA-512", "PLAIN"]);
    await waitFor(() => raw.closed, 2000, "the broker to close the connection");
  });

  test("a wrong PLAIN password is answered with error 58 and its message, then the connection closes", async () => {
    const raw = await RawClient.connect(broker.port);
    raw.sendRaw(17, 1, Buffer.from([0x00, 0x05, ...Buffer.from("PLAIN")]));
    expect((await raw.nextResponse()).body.readInt16BE(0)).toBe(0);
    const token = Buffer.from("\u0000alice\u0000nope");
    const size = Buffer.alloc(4);
    size.writeInt32BE(token.length);
    raw.sendRaw(36, 1, Buffer.concat([size, token]));
    const r = new Reader((await raw.nextResponse()).body);
    expect(r.int16()).toBe(58);
    expect(r.nullableString()).toBe("Authentication failed: Invalid username or password");
    await waitFor(() => raw.closed, 2000, "the broker to close the connection");
  });
});

describe.skipIf(!opensslAvailable)("TLS listeners with kafkajs", () => {
  let broker: RunningBroker;
  const seen: RequestLogEntry[] = [];
  beforeAll(async () => {
    broker = await startBroker({
      port: 0,
      minSessionTimeoutMs: 100,
      securityProtocol: "SSL",
      tls: { key: certs.serverKey, cert: certs.serverCert, ca: certs.ca, clientAuth: "required" },
      onRequest: (entry) => seen.push(entry),
    });
  });
  afterAll(async () => {
    await broker.stop();
  });

  test("mutual TLS: kafkajs with a client certificate produces and consumes; the principal is the certificate subject", async () => {
    const kafka = client(broker, {
      ssl: { ca: [certs.ca], cert: certs.clientCert, key: certs.clientKey },
    });
    expect(await roundTrip(kafka)).toBe("over the wire");
    expect(new Set(seen.map((e) => e.principal))).toEqual(new Set([certs.clientPrincipal]));
  });

  test("mutual TLS: a client without a certificate is refused", async () => {
    const admin = client(broker, { ssl: { ca: [certs.ca] } }, 0).admin();
    await expect(admin.connect()).rejects.toThrow();
    await admin.disconnect();
  });

  test("mutual TLS: a certificate from another CA is refused", async () => {
    const admin = client(
      broker,
      { ssl: { ca: [certs.ca], cert: certs.strangerCert, key: certs.strangerKey } },
      0,
    ).admin();
    await expect(admin.connect()).rejects.toThrow();
    await admin.disconnect();
  });

  test("a plaintext client cannot talk to a TLS listener", async () => {
    const admin = client(broker, {}, 0).admin();
    await expect(admin.connect()).rejects.toThrow();
    await admin.disconnect();
  });
});

describe.skipIf(!opensslAvailable)("SASL_SSL with client certificates required", () => {
  let broker: RunningBroker;
  const seen: RequestLogEntry[] = [];
  beforeAll(async () => {
    broker = await startBroker({
      port: 0,
      securityProtocol: "SASL_SSL",
      tls: { key: certs.serverKey, cert: certs.serverCert, ca: certs.ca, clientAuth: "required" },
      sasl: { mechanisms: ["SCRAM-SHA-512"], users: USERS },
      onRequest: (entry) => seen.push(entry),
    });
  });
  afterAll(async () => {
    await broker.stop();
  });

  test("both are needed; the SASL user, not the certificate, becomes the principal", async () => {
    const sasl512 = sasl("SCRAM-SHA-512", "alice", USERS.alice);
    const withCert = client(broker, {
      ssl: { ca: [certs.ca], cert: certs.clientCert, key: certs.clientKey },
      sasl: sasl512,
    }).admin();
    await withCert.connect();
    await withCert.listTopics();
    await withCert.disconnect();
    expect(seen.at(-1)?.principal).toBe("User:alice");
    // Before SASL completes the connection is known by its certificate.
    expect(seen.find((e) => e.apiKey === 18)?.principal).toBe(certs.clientPrincipal);

    const withoutCert = client(broker, { ssl: { ca: [certs.ca] }, sasl: sasl512 }, 0).admin();
    await expect(withoutCert.connect()).rejects.toThrow();
    await withoutCert.disconnect();
  });
});

describe.skipIf(!opensslAvailable)("TLS with client authentication requested", () => {
  let broker: RunningBroker;
  const seen: RequestLogEntry[] = [];
  beforeAll(async () => {
    broker = await startBroker({
      port: 0,
      securityProtocol: "SSL",
      tls: {
        key: certs.serverKeyFile,
        cert: certs.serverCertFile,
        ca: certs.caFile,
        clientAuth: "requested",
      },
      onRequest: (entry) => seen.push(entry),
    });
  });
  afterAll(async () => {
    await broker.stop();
  });

  test("a client without a certificate is admitted as User:ANONYMOUS (key and certificate read from files)", async () => {
    const admin = client(broker, { ssl: { ca: [certs.ca] } }).admin();
    await admin.connect();
    await admin.listTopics();
    await admin.disconnect();
    expect(seen.at(-1)?.principal).toBe("User:ANONYMOUS");
  });

  test("a certificate that does not verify is refused", async () => {
    const admin = client(
      broker,
      { ssl: { ca: [certs.ca], cert: certs.strangerCert, key: certs.strangerKey } },
      0,
    ).admin();
    await expect(admin.connect().then(() => admin.listTopics())).rejects.toThrow();
    await admin.disconnect();
  });
});

describe.skipIf(!opensslAvailable)("several listeners", () => {
  test("a PLAINTEXT listener next to SASL_SSL: each client is told its own listener's address", async () => {
    const broker = await startBroker({
      port: 0,
      minSessionTimeoutMs: 100,
      securityProtocol: "SASL_SSL",
      tls: { key: certs.serverKey, cert: certs.serverCert },
      sasl: { users: USERS },
      additionalListeners: [{ securityProtocol: "PLAINTEXT" }],
    });
    try {
      expect(broker.listeners.map((l) => l.securityProtocol)).toEqual(["SASL_SSL", "PLAINTEXT"]);
      const internal = broker.listeners[1] as (typeof broker.listeners)[number];
      expect(internal.port).not.toBe(broker.port);
      // kafkajs follows Metadata to the advertised address: the wrong listener's port would put
      // a plaintext client on the TLS port (or the reverse) and fail.
      const plain = new Kafka({
        clientId: uniqueName("internal"),
        brokers: internal.brokers,
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
      });
      expect(await roundTrip(plain)).toBe("over the wire");
      const secure = new Kafka({
        clientId: uniqueName("external"),
        brokers: broker.brokers,
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
        ssl: { ca: [certs.ca] },
        sasl: sasl("SCRAM-SHA-512", "alice", USERS.alice),
      });
      expect(await roundTrip(secure)).toBe("over the wire");
    } finally {
      await broker.stop();
    }
  });

  test("a listener that cannot bind fails the start and leaves nothing open", async () => {
    const first = await startBroker({ port: 0 });
    await expect(
      startBroker({ port: 0, additionalListeners: [{ port: first.port }] }),
    ).rejects.toThrow("EADDRINUSE");
    await first.stop();
  });
});

describe.skipIf(!opensslAvailable)("listener settings", () => {
  test("the CLI stops at start with one line naming a wrong setting, and never echoes a password", () => {
    const cli = new URL("./cli.ts", import.meta.url).pathname;
    const start = (...args: string[]) =>
      spawnSync(process.execPath, [cli, "--port=0", "--in-memory", ...args], {
        encoding: "utf8",
        timeout: 10_000,
      });
    const noTls = start("--security-protocol=SASL_SSL", "--sasl-users=alice:pw");
    expect(noTls.status).toBe(2);
    expect(noTls.stderr).toBe(
      "dev-broker: cannot start: security protocol SASL_SSL needs a TLS key and certificate\n",
    );
    const badUser = start("--security-protocol=SASL_PLAINTEXT", "--sasl-users=alice:pw,hunter2");
    expect(badUser.status).toBe(2);
    expect(badUser.stderr).toBe("dev-broker: --sasl-users: each user must be name:password\n");
    expect(badUser.stderr).not.toContain("hunter2");
    const badMechanism = start(
      "--security-protocol=SASL_PLAINTEXT",
      "--sasl-users=a:b",
      "--sasl-mechanisms=GSSAPI",
    );
    expect(badMechanism.stderr).toContain("--sasl-mechanisms: unknown GSSAPI");
    const badFloor = start("--protocol-floor=kafka-3.0");
    expect(badFloor.stderr).toContain("--protocol-floor must be one of kafka-4.0, none");
  });

  test("plaintext stays the default", async () => {
    const broker = await startBroker({ port: 0 });
    expect(broker.securityProtocol).toBe("PLAINTEXT");
    await broker.stop();
  });

  test.each([
    [{ securityProtocol: "SSL" as const }, "security protocol SSL needs a TLS key and certificate"],
    [{ securityProtocol: "SASL_SSL" as const, sasl: { users: USERS } }, "needs a TLS key"],
    [{ securityProtocol: "SASL_PLAINTEXT" as const }, "needs SASL users"],
    [{ sasl: { users: USERS } }, "SASL users given but the security protocol is PLAINTEXT"],
    [{ securityProtocol: "SASL_PLAINTEXT" as const, sasl: { users: {} } }, "at least one user"],
  ])("a contradictory setting fails at start: %j", async (options, message) => {
    await expect(startBroker({ port: 0, ...options })).rejects.toThrow(message);
  });
});

async function kcat(address: string, args: string[], input?: string) {
  const child = run("kcat", ["-b", address, ...args], { timeout: 20_000, encoding: "utf8" });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  return child;
}

describe.skipIf(!kcatAvailable || !opensslAvailable)("kcat (librdkafka) over TLS and SASL", () => {
  let scramBroker: ChildBroker;
  let mtlsBroker: ChildBroker;
  let plainBroker: ChildBroker;
  beforeAll(async () => {
    const usersFile = join(certs.dir, "users.txt");
    writeFileSync(usersFile, "# name:password\nalice:alice-secret\n\ncarol:c:a:r:o:l\n");
    [scramBroker, mtlsBroker, plainBroker] = await Promise.all([
      spawnCliBroker([
        "--port=0",
        "--in-memory",
        "--auto-create-topics",
        "--log-level=error",
        "--security-protocol=SASL_SSL",
        `--ssl-key=${certs.serverKeyFile}`,
        `--ssl-cert=${certs.serverCertFile}`,
        "--sasl-mechanisms=SCRAM-SHA-512",
        `--sasl-users-file=${usersFile}`,
      ]),
      spawnCliBroker([
        "--port=0",
        "--in-memory",
        "--auto-create-topics",
        "--log-level=error",
        "--security-protocol=SSL",
        `--ssl-key=${certs.serverKeyFile}`,
        `--ssl-cert=${certs.serverCertFile}`,
        `--ssl-ca=${certs.caFile}`,
        "--ssl-client-auth=required",
      ]),
      spawnCliBroker([
        "--port=0",
        "--in-memory",
        "--auto-create-topics",
        "--log-level=error",
        "--security-protocol=SASL_PLAINTEXT",
        "--sasl-users=alice:alice-secret,dave:dave-secret",
      ]),
    ]);
  });
  afterAll(() => {
    scramBroker?.process.kill("SIGTERM");
    mtlsBroker?.process.kill("SIGTERM");
    plainBroker?.process.kill("SIGTERM");
  });

  const scram = (password: string) => [
    "-X",
    "security.protocol=SASL_SSL",
    "-X",
    "sasl.mechanisms=SCRAM-SHA-512",
    "-X",
    "sasl.username=carol",
    "-X",
    `sasl.password=${password}`,
    "-X",
    `ssl.ca.location=${certs.caFile}`,
  ];
  const mtls = () => [
    "-X",
    "security.protocol=SSL",
    "-X",
    `ssl.ca.location=${certs.caFile}`,
    "-X",
    `ssl.certificate.location=${certs.clientCertFile}`,
    "-X",
    `ssl.key.location=${certs.clientKeyFile}`,
  ];

  test("kcat produces and consumes over SASL_SSL with SCRAM-SHA-512", async () => {
    const topic = uniqueName("kcat-scram");
    await await kcat(
      scramBroker.address,
      [...scram("c:a:r:o:l"), "-P", "-t", topic, "-K", ":"],
      "k1:one\nk2:two\n",
    );
    const { stdout } = await kcat(scramBroker.address, [
      ...scram("c:a:r:o:l"),
      "-C",
      "-t",
      topic,
      "-o",
      "beginning",
      "-e",
      "-f",
      "%k=%s\\n",
    ]);
    expect(stdout).toBe("k1=one\nk2=two\n");
  });

  test.each(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])(
    "kcat produces and consumes over SASL_PLAINTEXT with %s (users from --sasl-users)",
    async (mechanism) => {
      const auth = [
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        `sasl.mechanisms=${mechanism}`,
        "-X",
        "sasl.username=dave",
        "-X",
        "sasl.password=dave-secret",
      ];
      const topic = uniqueName("kcat-sasl");
      await kcat(plainBroker.address, [...auth, "-P", "-t", topic], `via ${mechanism}\n`);
      const { stdout } = await kcat(plainBroker.address, [
        ...auth,
        "-C",
        "-t",
        topic,
        "-o",
        "beginning",
        "-e",
      ]);
      expect(stdout).toBe(`via ${mechanism}\n`);
    },
  );

  test("kcat with a mechanism the listener does not enable is refused", async () => {
    const failure = await kcat(scramBroker.address, [
      "-X",
      "security.protocol=SASL_SSL",
      "-X",
      "sasl.mechanisms=PLAIN",
      "-X",
      "sasl.username=carol",
      "-X",
      "sasl.password=c:a:r:o:l",
      "-X",
      `ssl.ca.location=${certs.caFile}`,
      "-L",
      "-m",
      "5",
    ]).then(
      () => null,
      (error: { stderr: string; code: number }) => error,
    );
    expect(failure?.code).not.toBe(0);
    expect(failure?.stderr).toContain("PLAIN");
    expect(failure?.stderr).toMatch(/not supported by broker|Unsupported SASL mechanism/i);
  });

  test("kcat with a wrong SCRAM password is refused with the broker's message, without hanging", async () => {
    const started = Date.now();
    const failure = await kcat(scramBroker.address, [...scram("wrong"), "-L", "-m", "5"]).then(
      () => null,
      (error: { stderr: string; code: number }) => error,
    );
    expect(failure?.code).not.toBe(0);
    expect(failure?.stderr).toContain(
      "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  test("kcat produces and consumes over mutual TLS", async () => {
    const topic = uniqueName("kcat-mtls");
    await kcat(mtlsBroker.address, [...mtls(), "-P", "-t", topic], "hello\nmutual tls\n");
    const { stdout } = await kcat(mtlsBroker.address, [
      ...mtls(),
      "-C",
      "-t",
      topic,
      "-o",
      "beginning",
      "-e",
    ]);
    expect(stdout).toBe("hello\nmutual tls\n");
  });

  test("kcat without a client certificate is refused by the mutual-TLS listener", async () => {
    const failure = await kcat(mtlsBroker.address, [
      "-X",
      "security.protocol=SSL",
      "-X",
      `ssl.ca.location=${certs.caFile}`,
      "-L",
      "-m",
      "5",
    ]).then(
      () => null,
      (error: { code: number }) => error,
    );
    expect(failure?.code).not.toBe(0);
  });
});
