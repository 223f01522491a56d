// Every connection of the bus over TLS, mutual TLS and SASL_SSL with each mechanism, against the
// dev broker's secured listeners: the bus's own producer and log reader, and kafkajs's consumer
// and admin (which the bus drives). Then each misconfiguration, refused at once in one line that
// names the setting, with the password nowhere in it.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { contracts, type LeadViewRecorded, type TopicContract } from "@th/contracts";
import { leadViewRecorded } from "@th/contracts/samples";
import { type RunningBroker, startBroker } from "@th/dev-broker";
import { makeTestCertificates, type TestCertificates } from "@th/dev-broker/testing";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus, type BusOptions, on } from "./bus.ts";
import { done } from "./outcomes.ts";
import { TEST_TIMINGS } from "./testing/fixture.ts";

const PASSWORD = `pw-${randomBytes(12).toString("hex")}`;
const USER = "th-services";

let pki: TestCertificates;
/** A CA that signed none of the broker's certificates. */
let strangerCa: Buffer;
const brokers: Record<string, RunningBroker> = {};

beforeAll(async () => {
  pki = makeTestCertificates();
  strangerCa = readFileSync(join(pki.dir, "stranger-ca.pem"));
  const tls = { key: pki.serverKey, cert: pki.serverCert };
  const users = { [USER]: PASSWORD };
  const [plain, ssl, mtls, saslSsl, scram512Only] = await Promise.all([
    startBroker({ port: 0 }),
    startBroker({ port: 0, securityProtocol: "SSL", tls }),
    startBroker({
      port: 0,
      securityProtocol: "SSL",
      tls: { ...tls, ca: pki.ca, clientAuth: "required" },
    }),
    startBroker({ port: 0, securityProtocol: "SASL_SSL", tls, sasl: { users } }),
    startBroker({
      port: 0,
      securityProtocol: "SASL_SSL",
      tls,
      sasl: { users, mechanisms: ["SCRAM-SHA-512"] },
    }),
  ]);
  Object.assign(brokers, { plain, ssl, mtls, saslSsl, scram512Only });
}, 30_000);

afterAll(async () => {
  await Promise.all(Object.values(brokers).map((broker) => broker.stop()));
  pki?.remove();
});

const logger = createLogger({ service: "security-test", level: "silent" });

function busFor(broker: RunningBroker, security: Pick<BusOptions, "tls" | "sasl">): Bus {
  return new Bus({
    brokers: broker.brokers,
    clientId: "security-test",
    logger,
    consumerTimings: TEST_TIMINGS,
    retries: 2,
    ...security,
  });
}

function topicOf(name: string): TopicContract<LeadViewRecorded> {
  return {
    ...contracts.leadViewRecorded,
    topic: `security.${name}.${randomBytes(4).toString("hex")}`,
  };
}

/** Publish (own producer), replay (own log reader), consume in a group (kafkajs): all must work. */
async function roundTrip(bus: Bus, name: string): Promise<void> {
  const contract = topicOf(name);
  await bus.provision([contract]);
  const values = Array.from({ length: 50 }, (_, index) => ({
    ...leadViewRecorded,
    request_id: `${name}-${index}`,
  }));
  await bus.publish(contract, values);

  const replayed: string[] = [];
  const result = await bus.replay(contract, {
    onBatch: async (records) => {
      replayed.push(...records.map((record) => record.value.request_id));
    },
  });
  expect(result.records).toBe(50);
  expect(replayed.sort()).toEqual(values.map((value) => value.request_id).sort());

  const consumed: string[] = [];
  const consumer = await bus.consume({
    group: `security-${name}`,
    fromBeginning: true,
    subscriptions: [
      on(contract, async (message) => {
        consumed.push(message.value.request_id);
        return done;
      }),
    ],
  });
  try {
    await expect.poll(() => consumed.length, { timeout: 20_000 }).toBe(50);
    expect(consumed.sort()).toEqual(replayed);
  } finally {
    await consumer.stop();
  }
}

describe("the bus over secured listeners", () => {
  it("works over TLS with a CA bundle", async () => {
    const bus = busFor(brokers.ssl as RunningBroker, { tls: { ca: Buffer.from(pki.ca) } });
    try {
      expect(await bus.checkConnection()).toBeNull();
      await roundTrip(bus, "ssl");
    } finally {
      await bus.close();
    }
  });

  it("works over mutual TLS with a client certificate", async () => {
    const bus = busFor(brokers.mtls as RunningBroker, {
      tls: {
        ca: Buffer.from(pki.ca),
        cert: Buffer.from(pki.clientCert),
        key: Buffer.from(pki.clientKey),
      },
    });
    try {
      expect(await bus.checkConnection()).toBeNull();
      await roundTrip(bus, "mtls");
    } finally {
      await bus.close();
    }
  });

  for (const mechanism of ["plain", "scram-sha-256", "scram-sha-512"] as const) {
    it(`works over SASL_SSL with ${mechanism}`, async () => {
      const bus = busFor(brokers.saslSsl as RunningBroker, {
        tls: { ca: Buffer.from(pki.ca) },
        sasl: { mechanism, username: USER, password: PASSWORD },
      });
      try {
        expect(await bus.checkConnection()).toBeNull();
        await roundTrip(bus, mechanism);
      } finally {
        await bus.close();
      }
    });
  }
});

async function closedAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}

describe("a misconfigured connection", () => {
  const sasl = (
    password = PASSWORD,
    mechanism: "plain" | "scram-sha-256" | "scram-sha-512" = "scram-sha-512",
  ) => ({
    mechanism,
    username: USER,
    password,
  });

  /** The one line checkConnection gives, checked for speed, shape and secrecy. */
  async function problemOf(
    broker: RunningBroker | string[],
    security: Pick<BusOptions, "tls" | "sasl">,
  ) {
    const bus = new Bus({
      brokers: Array.isArray(broker) ? broker : broker.brokers,
      clientId: "security-test",
      logger,
      ...security,
    });
    const started = Date.now();
    try {
      const problem = await bus.checkConnection();
      expect(Date.now() - started).toBeLessThan(5000);
      expect(problem).not.toBeNull();
      expect(problem?.line).not.toContain("\n");
      expect(problem?.line).not.toContain(PASSWORD);
      expect(problem?.line).not.toContain("wrong-password-");
      return problem;
    } finally {
      await bus.close();
    }
  }

  it("names KAFKA_SASL_PASSWORD for a wrong password (SASL_AUTHENTICATION_FAILED), for each mechanism", async () => {
    for (const mechanism of ["plain", "scram-sha-256", "scram-sha-512"] as const) {
      const problem = await problemOf(brokers.saslSsl as RunningBroker, {
        tls: { ca: Buffer.from(pki.ca) },
        sasl: sasl(`wrong-password-${mechanism}`, mechanism),
      });
      expect(problem?.setting).toBe("KAFKA_SASL_PASSWORD");
      expect(problem?.line).toContain("SASL_AUTHENTICATION_FAILED");
      expect(problem?.retriable).toBe(false);
    }
  });

  it("names KAFKA_SASL_MECHANISM for a mechanism the listener does not enable", async () => {
    const problem = await problemOf(brokers.scram512Only as RunningBroker, {
      tls: { ca: Buffer.from(pki.ca) },
      sasl: sasl(PASSWORD, "plain"),
    });
    expect(problem?.setting).toBe("KAFKA_SASL_MECHANISM");
    expect(problem?.line).toMatch(/does not enable PLAIN \(it enables SCRAM-SHA-512/);
  });

  it("names KAFKA_TLS_CA_FILE for a broker certificate no trusted CA signed", async () => {
    const problem = await problemOf(brokers.saslSsl as RunningBroker, {
      tls: { ca: strangerCa },
      sasl: sasl(),
    });
    expect(problem?.setting).toBe("KAFKA_TLS_CA_FILE");
    expect(problem?.line).toContain("is not trusted");
  });

  it("names KAFKA_TLS_SERVERNAME for a certificate issued for another name", async () => {
    const problem = await problemOf(brokers.ssl as RunningBroker, {
      tls: { ca: Buffer.from(pki.ca), servername: "kafka.elsewhere.example" },
    });
    expect(problem?.setting).toBe("KAFKA_TLS_SERVERNAME");
  });

  it("names KAFKA_TLS_CERT_FILE when mutual TLS gets no certificate or one it does not trust", async () => {
    for (const client of [
      {},
      { cert: Buffer.from(pki.strangerCert), key: Buffer.from(pki.strangerKey) },
    ]) {
      const problem = await problemOf(brokers.mtls as RunningBroker, {
        tls: { ca: Buffer.from(pki.ca), ...client },
      });
      expect(problem?.setting, JSON.stringify(Object.keys(client))).toBe("KAFKA_TLS_CERT_FILE");
    }
  });

  it("names KAFKA_TLS when plaintext meets a TLS listener, and when TLS meets a plaintext one", async () => {
    expect((await problemOf(brokers.ssl as RunningBroker, {}))?.setting).toBe("KAFKA_TLS");
    expect(
      (await problemOf(brokers.plain as RunningBroker, { tls: { ca: Buffer.from(pki.ca) } }))
        ?.setting,
    ).toBe("KAFKA_TLS");
  });

  it("names KAFKA_BROKERS when no bootstrap broker answers, and says waiting may mend it", async () => {
    const closed = await closedAddress();
    const problem = await problemOf([closed], { tls: { ca: Buffer.from(pki.ca) }, sasl: sasl() });
    expect(problem?.setting).toBe("KAFKA_BROKERS");
    expect(problem?.line).toContain(`no Kafka broker answers at ${closed}`);
    expect(problem?.retriable).toBe(true);
  });
});
