/**
 * What TLS with SCRAM costs the ingest path: the bus's publish (its own producer) and kafkajs's
 * group consume, against a plaintext listener and a SASL_SSL (SCRAM-SHA-512) one of the dev
 * broker, each in its own process, in the same run. kafkajs's producer is measured on both too,
 * the alternative to the bus's own producer. Alternating rounds; medians of records/s and of CPU
 * per record, this process's (the client's) and the broker's apart: on a small machine the
 * broker, which does its own TLS, is the larger share.
 *
 *   node bench/kafka-security.ts [--records 40000] [--per-publish 2000] [--rounds 3]
 */
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Bus, type BusOptions, encodeValue, onBatch } from "@th/bus";
import { contracts, SCHEMA_HEADER, schemaHeaderValue } from "@th/contracts";
import { Kafka, logLevel } from "kafkajs";
import { partitionOfKey } from "../packages/bus/src/partitioner.ts";
import { makeTestCertificates } from "../packages/dev-broker/src/testing.ts";
import { createLogger } from "../packages/telemetry/src/index.ts";
import { type BrokerProcess, startBrokerProcess } from "./support/broker-process.ts";
import { cpuMsOf } from "./support/cpu.ts";
import { distinctParcels, publishArgs } from "./support/parcel-records.ts";

const { total, perPublish, rounds } = publishArgs("40000");

const pki = makeTestCertificates();
const password = randomBytes(16).toString("hex");
const usersFile = join(pki.dir, "users.txt");
await writeFile(usersFile, `bench:${password}\n`);
const plainBroker = await startBrokerProcess(["--in-memory"]);
const secureBroker = await startBrokerProcess([
  "--in-memory",
  "--security-protocol",
  "SASL_SSL",
  "--ssl-key",
  pki.serverKeyFile,
  "--ssl-cert",
  pki.serverCertFile,
  "--sasl-mechanisms",
  "SCRAM-SHA-512",
  "--sasl-users-file",
  usersFile,
]);

const logger = createLogger({ service: "bench", level: "warn" });
const secure: Pick<BusOptions, "tls" | "sasl"> = {
  tls: { ca: Buffer.from(pki.ca) },
  sasl: { mechanism: "scram-sha-512", username: "bench", password },
};

interface Side {
  label: string;
  broker: BrokerProcess;
  bus: Bus;
  kafka: Kafka;
}

function sideOf(
  label: string,
  broker: BrokerProcess,
  security: Pick<BusOptions, "tls" | "sasl">,
): Side {
  const address = broker.address;
  return {
    label,
    broker,
    bus: new Bus({
      brokers: [address],
      clientId: `bench-${label}`,
      logger,
      consumerTimings: { sessionTimeout: 6000, heartbeatInterval: 300, maxWaitTimeInMs: 100 },
      ...security,
    }),
    kafka: new Kafka({
      brokers: [address],
      clientId: `bench-kafkajs-${label}`,
      logLevel: logLevel.NOTHING,
      ...(security.tls ? { ssl: { ca: [security.tls.ca as Buffer] } } : {}),
      ...(security.sasl
        ? {
            sasl: {
              mechanism: "scram-sha-512" as const,
              username: security.sasl.username,
              password: security.sasl.password,
            },
          }
        : {}),
    }),
  };
}

const sides = [sideOf("plaintext", plainBroker, {}), sideOf("sasl_ssl", secureBroker, secure)];

const records = distinctParcels(total);
const contract = contracts.parcelIngested;
const headers = { [SCHEMA_HEADER]: schemaHeaderValue(contract) };

interface Figure {
  rate: number;
  /** µs of CPU per record: this process, the broker. */
  client: number;
  broker: number;
}

async function timed(side: Side, work: () => Promise<number | undefined>): Promise<Figure> {
  const brokerBefore = cpuMsOf(side.broker.pid);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const count = (await work()) ?? total;
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    rate: count / seconds,
    client: (cpu.user + cpu.system) / count,
    broker: ((cpuMsOf(side.broker.pid) - brokerBefore) * 1000) / count,
  };
}

async function busPublish(side: Side): Promise<Figure> {
  return timed(side, async () => {
    for (let from = 0; from < total; from += perPublish) {
      await side.bus.publish(contract, records.slice(from, from + perPublish), { headers });
    }
    return undefined;
  });
}

const producers = new Map<Side, ReturnType<Kafka["producer"]>>();
async function kafkajsPublish(side: Side): Promise<Figure> {
  let producer = producers.get(side);
  if (!producer) {
    producer = side.kafka.producer({
      allowAutoTopicCreation: false,
      createPartitioner:
        () =>
        ({ partitionMetadata, message }) =>
          partitionOfKey(message.key as string, partitionMetadata.length),
    });
    await producer.connect();
    producers.set(side, producer);
  }
  const connected = producer;
  return timed(side, async () => {
    for (let from = 0; from < total; from += perPublish) {
      await connected.send({
        topic: contract.topic,
        acks: -1,
        messages: records.slice(from, from + perPublish).map((value) => ({
          key: contract.keyOf(value),
          value: encodeValue(contract, value),
          headers,
        })),
      });
    }
    return undefined;
  });
}

/** A fresh group reads the topic from the start until it has `total` records. */
async function kafkajsConsume(side: Side, round: number): Promise<Figure> {
  return timed(side, async () => {
    let seen = 0;
    let finished: () => void = () => {};
    const all = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const consumer = await side.bus.consume({
      group: `bench-${side.label}-${round}-${randomBytes(3).toString("hex")}`,
      fromBeginning: true,
      partitionsConsumedConcurrently: 12,
      subscriptions: [
        onBatch(contract, async (batch) => {
          seen += batch.length;
          if (seen >= total) {
            finished();
          }
          return undefined;
        }),
      ],
    });
    await all;
    void consumer.stop();
    return seen;
  });
}

const median = (list: number[]) =>
  [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;

try {
  for (const side of sides) {
    await side.bus.provision([contract]);
    // Warm the paths (JIT, connections, metadata, the SCRAM handshake) before measuring.
    await side.bus.publish(contract, records.slice(0, perPublish), { headers });
  }
  const figures = new Map<string, Figure[]>();
  const add = (key: string, value: Figure) =>
    figures.set(key, [...(figures.get(key) ?? []), value]);
  for (let round = 0; round < rounds; round++) {
    for (const side of sides) {
      add(`bus publish ${side.label}`, await busPublish(side));
      add(`kafkajs publish ${side.label}`, await kafkajsPublish(side));
    }
    // The topic is truncated nowhere, so each round's group reads one round's worth at least.
    for (const side of sides) {
      add(`kafkajs consume ${side.label}`, await kafkajsConsume(side, round));
    }
  }
  const of = (key: string, field: keyof Figure) =>
    median((figures.get(key) ?? []).map((figure) => figure[field]));
  const rate = (key: string) => of(key, "rate");
  console.info(
    `${total.toLocaleString("en-US")} parcel.ingested records per run, publishes of ${perPublish}, acks=-1, median of ${rounds} alternating rounds; SASL_SSL = TLS 1.3 + SCRAM-SHA-512`,
  );
  for (const key of figures.keys()) {
    console.info(
      `${key.padEnd(28)} ${Math.round(rate(key)).toLocaleString("en-US").padStart(9)} records/s  this process ${of(key, "client").toFixed(1).padStart(5)} µs/record  broker ${of(key, "broker").toFixed(1).padStart(5)} µs/record`,
    );
  }
  const ratio = (a: string, b: string) => (rate(a) / rate(b)).toFixed(2);
  console.info(
    `SASL_SSL / plaintext: bus publish ${ratio("bus publish sasl_ssl", "bus publish plaintext")}x, kafkajs consume ${ratio("kafkajs consume sasl_ssl", "kafkajs consume plaintext")}x (target >= 0.70x)`,
  );
  const cpu = (key: string) => of(key, "client");
  console.info(
    `client CPU per record, SASL_SSL / plaintext: bus publish ${(cpu("bus publish sasl_ssl") / cpu("bus publish plaintext")).toFixed(2)}x, kafkajs consume ${(cpu("kafkajs consume sasl_ssl") / cpu("kafkajs consume plaintext")).toFixed(2)}x`,
  );
  console.info(
    `bus / kafkajs publish: plaintext ${ratio("bus publish plaintext", "kafkajs publish plaintext")}x, SASL_SSL ${ratio("bus publish sasl_ssl", "kafkajs publish sasl_ssl")}x`,
  );
} finally {
  for (const producer of producers.values()) {
    await producer.disconnect();
  }
  for (const side of sides) {
    await side.bus.close();
  }
  await plainBroker.stop();
  await secureBroker.stop();
  pki.remove();
}
