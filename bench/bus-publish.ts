/**
 * Bulk publish through the bus's own producer against kafkajs's producer doing the same work (the
 * bus's publish before it had its own): the same `parcel.ingested` records, Avro-encoded, keyed by
 * folio with the same partition choice and headers, sent in publishes of 2,000 with acks=-1 to a
 * dev broker in its own process. Alternating rounds; medians of records/s and of this process's
 * CPU per record.
 *
 *   node bench/bus-publish.ts [--records 100000] [--per-publish 2000] [--rounds 3]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bus, encodeValue } from "@th/bus";
import { contracts, type ParcelIngested, SCHEMA_HEADER, schemaHeaderValue } from "@th/contracts";
import { Kafka, logLevel } from "kafkajs";
import { partitionOfKey } from "../packages/bus/src/partitioner.ts";
import { createLogger } from "../packages/telemetry/src/index.ts";
import { startBrokerProcess } from "./support/broker-process.ts";
import { cpuMsOf } from "./support/cpu.ts";
import { distinctParcels, publishArgs } from "./support/parcel-records.ts";

const { total, perPublish, rounds } = publishArgs("100000");

const dir = await mkdtemp(join(tmpdir(), "bus-publish-"));
const broker = await startBrokerProcess(["--data-dir", join(dir, "kafka")]);
const brokerAddress = broker.address;

const logger = createLogger({ service: "bench", level: "warn" });
const bus = new Bus({ brokers: [brokerAddress], clientId: "bench", logger });
const kafka = new Kafka({
  brokers: [brokerAddress],
  clientId: "bench-kafkajs",
  logLevel: logLevel.NOTHING,
});
const kafkajsProducer = kafka.producer({
  allowAutoTopicCreation: false,
  createPartitioner:
    () =>
    ({ partitionMetadata, message }) =>
      partitionOfKey(message.key as string, partitionMetadata.length),
});

const records = distinctParcels(total);
const contract = contracts.parcelIngested;
const headers = {
  [SCHEMA_HEADER]: schemaHeaderValue(contract),
  traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
};

type Publisher = (slice: readonly ParcelIngested[]) => Promise<void>;

const viaBus: Publisher = (slice) => bus.publish(contract, slice, { headers });
const viaKafkajs: Publisher = async (slice) => {
  await kafkajsProducer.send({
    topic: contract.topic,
    acks: -1,
    messages: slice.map((value) => ({
      key: contract.keyOf(value),
      value: encodeValue(contract, value),
      headers,
    })),
  });
};

interface Run {
  rate: number;
  cpuUsPerRecord: number;
  brokerUsPerRecord: number;
}

async function run(publish: Publisher): Promise<Run> {
  const brokerBefore = cpuMsOf(broker.pid);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let from = 0; from < total; from += perPublish) {
    await publish(records.slice(from, from + perPublish));
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    rate: total / seconds,
    cpuUsPerRecord: (cpu.user + cpu.system) / total,
    brokerUsPerRecord: ((cpuMsOf(broker.pid) - brokerBefore) * 1000) / total,
  };
}

const median = (list: number[]) =>
  [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;

try {
  await bus.provision([contract]);
  await kafkajsProducer.connect();
  // Warm both paths (JIT, connections, metadata) before measuring.
  await viaBus(records.slice(0, perPublish));
  await viaKafkajs(records.slice(0, perPublish));
  const results = { bus: [] as Run[], kafkajs: [] as Run[] };
  for (let round = 0; round < rounds; round++) {
    results.kafkajs.push(await run(viaKafkajs));
    results.bus.push(await run(viaBus));
  }
  const line = (label: string, list: Run[]) => {
    const rate = median(list.map((item) => item.rate));
    const cpu = median(list.map((item) => item.cpuUsPerRecord));
    const broker = median(list.map((item) => item.brokerUsPerRecord));
    console.info(
      `${label.padEnd(34)} ${Math.round(rate).toLocaleString("en-US").padStart(9)} records/s  this process ${cpu.toFixed(1).padStart(5)} µs/record  broker ${broker.toFixed(1).padStart(5)} µs/record`,
    );
    return { rate, cpu };
  };
  console.info(
    `${total.toLocaleString("en-US")} parcel.ingested records in publishes of ${perPublish}, acks=-1, median of ${rounds} alternating rounds`,
  );
  const baseline = line("baseline: kafkajs producer", results.kafkajs);
  const ours = line("bus producer", results.bus);
  console.info(
    `bus / kafkajs: ${(ours.rate / baseline.rate).toFixed(2)}x records/s, ${(ours.cpu / baseline.cpu).toFixed(2)}x CPU per record`,
  );
} finally {
  await kafkajsProducer.disconnect();
  await bus.close();
  await broker.stop();
  await rm(dir, { recursive: true, force: true });
}
