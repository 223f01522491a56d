import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { startBroker } from "@th/dev-broker";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLog } from "./log-reader.ts";
import { ProduceError, RecordProducer, type RecordProducerOptions } from "./producer.ts";
import { encodeHeaders, RecordBatchWriter } from "./record-batch.ts";
import { createTestTopic } from "./testing/topics.ts";

let broker: Awaited<ReturnType<typeof startBroker>>;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startBroker({ port: 0 });
  kafka = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING });
});

afterAll(async () => {
  await broker.stop();
});

function topicWith(partitions: number): Promise<string> {
  return createTestTopic(kafka, "producer", partitions);
}

function batchOf(values: readonly string[]): Buffer {
  const writer = new RecordBatchWriter(Date.now());
  for (const value of values) {
    writer.add(value, Buffer.from(value), encodeHeaders({ "th-schema": "test/v1" }));
  }
  return writer.finish();
}

async function valuesIn(topic: string, partition: number): Promise<string[]> {
  const read: string[] = [];
  await readLog(
    {
      clientId: "producer-test",
      host: broker.host,
      port: broker.port,
      topic,
      ranges: new Map([[partition, [0n, 1_000n] as const]]),
      header: "th-schema",
    },
    async (records) => {
      read.push(...records.map((record) => record.value?.toString() ?? ""));
    },
  );
  return read;
}

function producerVia(
  address: { host: string; port: number },
  partitions: number,
  overrides: Partial<RecordProducerOptions> = {},
): { producer: RecordProducer; lookups: () => number } {
  let lookups = 0;
  const producer = new RecordProducer({
    clientId: "producer-test",
    lookup: async () => {
      lookups += 1;
      return { leaders: Array.from({ length: partitions }, () => address) };
    },
    retries: 3,
    initialRetryMs: 10,
    ackTimeoutMs: 5_000,
    requestTimeoutMs: 10_000,
    maxRouteAgeMs: 60_000,
    ...overrides,
  });
  return { producer, lookups: () => lookups };
}

/** A TCP relay to the broker that drops the first `drop` connections as soon as they send. */
async function relay(drop: number): Promise<{ server: Server; address: AddressInfo }> {
  let dropped = 0;
  const server = createServer((client: Socket) => {
    if (dropped < drop) {
      dropped += 1;
      client.once("data", () => client.destroy());
      return;
    }
    const upstream = connect(broker.port, "127.0.0.1");
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, address: server.address() as AddressInfo };
}

describe("the bus's producer", () => {
  it("acknowledges each partition's batches only once stored, later batches after earlier ones", async () => {
    const topic = await topicWith(3);
    const { producer } = producerVia({ host: broker.host, port: broker.port }, 3);
    try {
      await producer.produce(
        topic,
        new Map([
          [0, [batchOf(["a1", "a2"]), batchOf(["a3"])]],
          [2, [batchOf(["c1"])]],
        ]),
      );
      expect(await valuesIn(topic, 0)).toEqual(["a1", "a2", "a3"]);
      expect(await valuesIn(topic, 1)).toEqual([]);
      expect(await valuesIn(topic, 2)).toEqual(["c1"]);
    } finally {
      producer.close();
    }
  });

  it("sends again on a fresh connection when the connection drops before an answer", async () => {
    const topic = await topicWith(1);
    const { server, address } = await relay(1);
    const { producer, lookups } = producerVia({ host: "127.0.0.1", port: address.port }, 1);
    try {
      await producer.produce(topic, new Map([[0, [batchOf(["once"])]]]));
      expect(await valuesIn(topic, 0)).toEqual(["once"]);
      // The failed attempt made it look the leaders up again.
      expect(lookups()).toBe(2);
    } finally {
      producer.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("looks the metadata up again on a refusal that can pass, then gives up naming the broker's error", async () => {
    const topic = await topicWith(1);
    // Metadata that claims a partition the topic does not have: the broker refuses it.
    const { producer, lookups } = producerVia({ host: broker.host, port: broker.port }, 4, {
      retries: 2,
    });
    try {
      const failure = producer.produce(topic, new Map([[3, [batchOf(["lost"])]]]));
      await expect(failure).rejects.toThrow(ProduceError);
      await expect(failure).rejects.toThrow(/UNKNOWN_TOPIC_OR_PARTITION \(3\)/);
      expect(lookups()).toBe(3);
    } finally {
      producer.close();
    }
  });

  it("gives up a request the broker never answers once its timeout passes", async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const { producer } = producerVia({ host: "127.0.0.1", port }, 1, {
      retries: 0,
      requestTimeoutMs: 300,
    });
    try {
      await expect(producer.produce("silent", new Map([[0, [batchOf(["x"])]]]))).rejects.toThrow(
        /did not answer in time/,
      );
    } finally {
      producer.close();
      for (const socket of sockets) {
        socket.destroy();
      }
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
