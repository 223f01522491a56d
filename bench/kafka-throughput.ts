import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { connect, type Socket } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import type * as KafkaJs from "kafkajs";
import { startBrokerProcess } from "./support/broker-process.ts";

const requireFromBroker = createRequire(
  new URL("../packages/dev-broker/package.json", import.meta.url),
);
const { Kafka, logLevel } = requireFromBroker("kafkajs") as typeof KafkaJs;
const produceV7 = requireFromBroker("kafkajs/src/protocol/requests/produce/v7/request");
const fetchV11 = requireFromBroker("kafkajs/src/protocol/requests/fetch/v11/request");

const MESSAGE_BYTES = 1024;
const VALUE = Buffer.alloc(MESSAGE_BYTES, "a");
const BATCH = 1000;

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(52)} ${value}\n`);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const rate = (messages: number, ms: number): number => Math.round((messages / ms) * 1000);

/** Minimal pipelining client: sends pre-encoded frames and counts responses. */
class RawConnection {
  private readonly socket: Socket;
  private buffered = Buffer.alloc(0);
  private onFrame: ((frame: Buffer) => void) | null = null;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      while (this.buffered.length >= 4) {
        const size = this.buffered.readInt32BE(0);
        if (this.buffered.length < 4 + size) {
          break;
        }
        const frame = this.buffered.subarray(4, 4 + size);
        this.buffered = this.buffered.subarray(4 + size);
        this.onFrame?.(frame);
      }
    });
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve) => {
      const socket = connect(port, "127.0.0.1", () => resolve(new RawConnection(socket)));
    });
  }

  static async frame(
    request: { apiKey: number; apiVersion: number; encode(): Promise<{ buffer: Buffer }> },
    correlationId: number,
  ): Promise<Buffer> {
    const body = (await request.encode()).buffer;
    const header = Buffer.alloc(14);
    header.writeInt32BE(10 + body.length, 0);
    header.writeInt16BE(request.apiKey, 4);
    header.writeInt16BE(request.apiVersion, 6);
    header.writeInt32BE(correlationId, 8);
    header.writeInt16BE(0, 12);
    return Buffer.concat([header, body]);
  }

  listen(onFrame: (frame: Buffer) => void): void {
    this.onFrame = onFrame;
  }

  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  close(): void {
    this.socket.destroy();
  }
}

async function rawProduceBaseline(port: number, topic: string, requests: number): Promise<number> {
  const conn = await RawConnection.open(port);
  const frame = await RawConnection.frame(
    produceV7({
      acks: 1,
      timeout: 1000,
      topicData: [
        {
          topic,
          partitions: [
            { partition: 0, messages: Array.from({ length: BATCH }, () => ({ value: VALUE })) },
          ],
        },
      ],
    }),
    1,
  );
  const inFlight = 8;
  let sent = 0;
  let done = 0;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    conn.listen(() => {
      done++;
      if (sent < requests) {
        sent++;
        conn.write(frame);
      }
      if (done === requests) {
        resolve();
      }
    });
    for (; sent < Math.min(inFlight, requests); sent++) {
      conn.write(frame);
    }
  });
  const elapsed = performance.now() - started;
  conn.close();
  return rate(requests * BATCH, elapsed);
}

async function longPollWake(port: number, topic: string, samples: number): Promise<number[]> {
  const fetcher = await RawConnection.open(port);
  const producer = await RawConnection.open(port);
  const produceFrame = await RawConnection.frame(
    produceV7({
      acks: 1,
      timeout: 1000,
      topicData: [{ topic, partitions: [{ partition: 0, messages: [{ value: "wake" }] }] }],
    }),
    1,
  );
  producer.listen(() => {});
  const wakes: number[] = [];
  for (let i = 0; i < samples; i++) {
    const fetchFrame = await RawConnection.frame(
      fetchV11({
        replicaId: -1,
        maxWaitTime: 5000,
        minBytes: 1,
        maxBytes: 1024 * 1024,
        topics: [
          { topic, partitions: [{ partition: 0, fetchOffset: String(i), maxBytes: 1024 * 1024 }] },
        ],
      }),
      i + 1,
    );
    const answered = new Promise<number>((resolve) =>
      fetcher.listen(() => resolve(performance.now())),
    );
    fetcher.write(fetchFrame);
    await new Promise((r) => setTimeout(r, 5)); // let the fetch park
    const sentAt = performance.now();
    producer.write(produceFrame);
    wakes.push((await answered) - sentAt);
  }
  fetcher.close();
  producer.close();
  return wakes.sort((a, b) => a - b);
}

type Producer = KafkaJs.Producer;

/** Baseline: unbatched kafkajs produce (one message per request, sequential). */
async function unbatchedProduce(producer: Producer, singles: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < singles; i++) {
    await producer.send({ topic: "bench-single", acks: 1, messages: [{ value: VALUE }] });
  }
  return rate(singles, performance.now() - started);
}

/**
 * kafkajs batched produce into 4 partitions, one send in flight per partition, until `total`
 * messages were sent. Answers how many were sent and at what rate.
 */
async function batchedProduce(
  producer: Producer,
  topic: string,
  total: number,
): Promise<{ messages: number; rate: number }> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    [0, 1, 2, 3].map(async (partition) => {
      while (next < total) {
        next += BATCH;
        await producer.send({
          topic,
          acks: -1,
          messages: Array.from({ length: BATCH }, () => ({ partition, value: VALUE })),
        });
      }
    }),
  );
  return { messages: next, rate: rate(next, performance.now() - started) };
}

/** kafkajs consume of everything produced into `bench-produce`, from the first message on. */
async function consumeAll(
  kafka: KafkaJs.Kafka,
  mode: "eachBatch" | "eachMessage",
  producedMessages: number,
): Promise<number> {
  const consumer = kafka.consumer({
    groupId: `bench-${mode}`,
    maxWaitTimeInMs: 100,
    heartbeatInterval: 1000,
    sessionTimeout: 10_000,
    maxBytesPerPartition: 4 * 1024 * 1024,
  });
  await consumer.connect();
  await consumer.subscribe({ topic: "bench-produce", fromBeginning: true });
  let consumed = 0;
  let first = 0;
  const finished = new Promise<number>((resolve) => {
    const count = (n: number): void => {
      if (first === 0) {
        first = performance.now();
      }
      consumed += n;
      if (consumed >= producedMessages) {
        resolve(performance.now());
      }
    };
    void consumer.run(
      mode === "eachBatch"
        ? { eachBatch: async ({ batch }) => count(batch.messages.length) }
        : { eachMessage: async () => count(1) },
    );
  });
  const end = await finished;
  await consumer.disconnect();
  return rate(consumed, end - first);
}

/** Produce-to-eachMessage latency with kafkajs defaults (5 s long-poll), sorted. */
async function eachMessageLatencies(kafka: KafkaJs.Kafka, producer: Producer): Promise<number[]> {
  const latencyConsumer = kafka.consumer({ groupId: "bench-latency", sessionTimeout: 10_000 });
  await latencyConsumer.connect();
  await latencyConsumer.subscribe({ topic: "bench-latency", fromBeginning: false });
  const latencies: number[] = [];
  let pending: ((t: number) => void) | null = null;
  let joined = false;
  latencyConsumer.on(latencyConsumer.events.GROUP_JOIN, () => {
    joined = true;
  });
  await latencyConsumer.run({
    eachMessage: async () => {
      pending?.(performance.now());
    },
  });
  while (!joined) {
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 300)); // the first fetch parks on the empty topic
  for (let i = 0; i < 500; i++) {
    const received = new Promise<number>((resolve) => {
      pending = resolve;
    });
    const sentAt = performance.now();
    await producer.send({ topic: "bench-latency", acks: 1, messages: [{ value: `${i}` }] });
    latencies.push((await received) - sentAt);
  }
  await latencyConsumer.disconnect();
  return latencies.sort((a, b) => a - b);
}

function reportPercentiles(label: string, sorted: number[]): void {
  report(
    label,
    `p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms`,
  );
}

/** Every figure against the in-memory broker. */
async function inMemoryFigures(): Promise<void> {
  const broker = await startBrokerProcess(["--in-memory"]);
  const kafka = new Kafka({
    brokers: [broker.address],
    logLevel: logLevel.NOTHING,
    clientId: "bench",
  });
  const admin = kafka.admin();
  await admin.connect();
  const topics = ["bench-produce", "bench-raw", "bench-wake", "bench-latency", "bench-single"];
  await admin.createTopics({
    topics: topics.map((topic) => ({ topic, numPartitions: topic === "bench-produce" ? 4 : 1 })),
  });

  const producer = kafka.producer();
  await producer.connect();
  const unbatchedRate = await unbatchedProduce(producer, 3000);
  report("baseline: kafkajs unbatched produce (acks=1)", `${unbatchedRate} msg/s`);

  // Baseline 2: the broker alone, fed pre-encoded Produce requests over a raw socket.
  const rawRate = await rawProduceBaseline(broker.port, "bench-raw", 200);
  report("baseline: raw-socket pipelined produce (acks=1)", `${rawRate} msg/s`);

  // A JIT warm-up round before the batched produce.
  for (let i = 0; i < 20; i++) {
    await producer.send({
      topic: "bench-single",
      acks: 1,
      messages: Array.from({ length: BATCH }, () => ({ value: VALUE })),
    });
  }
  const batched = await batchedProduce(producer, "bench-produce", 200_000);
  report("kafkajs batched produce (acks=-1, in-memory)", `${batched.rate} msg/s`);
  report("  ratio vs unbatched baseline", `${(batched.rate / unbatchedRate).toFixed(1)}x`);
  report("  ratio vs raw-socket broker baseline", `${(batched.rate / rawRate).toFixed(2)}x`);

  for (const mode of ["eachBatch", "eachMessage"] as const) {
    const consumeRate = await consumeAll(kafka, mode, batched.messages);
    report(`kafkajs consume (${mode}, 4 partitions)`, `${consumeRate} msg/s`);
  }

  reportPercentiles(
    "produce -> eachMessage latency (500 samples)",
    await eachMessageLatencies(kafka, producer),
  );
  reportPercentiles(
    "long-poll wake (produce sent -> parked fetch answered)",
    await longPollWake(broker.port, "bench-wake", 200),
  );

  await producer.disconnect();
  await admin.disconnect();
  await broker.stop();
}

/** The same batched produce against a persistent broker: acks=-1 waits for a (group-committed) fsync. */
async function durableFigures(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), "dev-broker-bench-"));
  const durable = await startBrokerProcess(["--data-dir", dataDir]);
  const durableKafka = new Kafka({ brokers: [durable.address], logLevel: logLevel.NOTHING });
  const durableAdmin = durableKafka.admin();
  await durableAdmin.connect();
  await durableAdmin.createTopics({ topics: [{ topic: "bench-durable", numPartitions: 4 }] });
  const durableProducer = durableKafka.producer();
  await durableProducer.connect();
  const batched = await batchedProduce(durableProducer, "bench-durable", 100_000);
  report("kafkajs batched produce (acks=-1, fsync to disk)", `${batched.rate} msg/s`);
  await durableProducer.disconnect();
  await durableAdmin.disconnect();
  await durable.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const cpu = cpus();
  report("machine", `${cpu.length} x ${cpu[0]?.model ?? "unknown cpu"}, node ${process.version}`);
  report("message size", `${MESSAGE_BYTES} bytes, kafkajs batches of ${BATCH}`);
  await inMemoryFigures();
  await durableFigures();
}

await main();
