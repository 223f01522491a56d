// Every Kafka client path of the project against a broker that enforces Apache Kafka 4.0's
// protocol floor (KIP-896): kafkajs admin, producer and consumer group, the bus's own producer and
// log reader, and kcat (librdkafka). Prints which version of each API each client negotiated.
import { execFile, spawnSync } from "node:child_process";
import { ApiKey, KAFKA_4_0_MIN_VERSIONS, type RequestLogEntry, startBroker } from "@th/dev-broker";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLog } from "./log-reader.ts";
import { RecordProducer } from "./producer.ts";
import { encodeHeaders, RecordBatchWriter } from "./record-batch.ts";

const kcatAvailable = spawnSync("kcat", ["-V"]).status === 0;
if (!kcatAvailable) {
  console.warn("kcat rows skipped: `kcat` is not installed (apt-get install -y kcat)");
}

const API_NAMES = new Map<number, string>(Object.entries(ApiKey).map(([name, key]) => [key, name]));

let broker: Awaited<ReturnType<typeof startBroker>>;
const seen: RequestLogEntry[] = [];

beforeAll(async () => {
  // The default floor is Kafka 4.0's; nothing here asks for it, so the test also pins the default.
  broker = await startBroker({ port: 0, minSessionTimeoutMs: 100, onRequest: (e) => seen.push(e) });
});

afterAll(async () => {
  await broker.stop();
});

function kafka(clientId: string): Kafka {
  return new Kafka({ clientId, brokers: broker.brokers, logLevel: logLevel.NOTHING });
}

describe("Kafka 4.0 protocol floor", () => {
  it("every client path of the project negotiates versions at or above Kafka 4.0's minimum", async () => {
    const topic = `floor-${Date.now()}`;
    const admin = kafka("kafkajs-admin").admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    await admin.fetchTopicOffsets(topic);

    const producer = kafka("kafkajs-producer").producer({ idempotent: true });
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: "k", value: "from kafkajs" }] });
    await producer.disconnect();

    const groupId = `floor-group-${Date.now()}`;
    const consumer = kafka("kafkajs-consumer").consumer({
      groupId,
      maxWaitTimeInMs: 100,
      heartbeatInterval: 100,
      sessionTimeout: 3000,
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let consumed = 0;
    await consumer.run({
      eachMessage: async () => {
        consumed += 1;
      },
    });
    const deadline = Date.now() + 15_000;
    while (consumed === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(consumed).toBe(1);
    await consumer.disconnect();
    await admin.fetchOffsets({ groupId, topics: [topic] });
    await admin.deleteGroups([groupId]);

    const address = { host: broker.host, port: broker.port };
    const busProducer = new RecordProducer({
      clientId: "bus-producer",
      lookup: async () => ({ leaders: [address, address] }),
      retries: 0,
      initialRetryMs: 10,
      ackTimeoutMs: 5000,
      requestTimeoutMs: 5000,
      maxRouteAgeMs: 60_000,
    });
    const batch = new RecordBatchWriter(Date.now());
    batch.add("k", Buffer.from("from the bus"), encodeHeaders({ "th-schema": "floor/v1" }));
    await busProducer.produce(topic, new Map([[1, [batch.finish()]]]));
    busProducer.close();

    const read: string[] = [];
    await readLog(
      {
        clientId: "bus-log-reader",
        ...address,
        topic,
        ranges: new Map([[1, [0n, 1n] as const]]),
        header: "th-schema",
      },
      async (records) => {
        read.push(...records.map((r) => r.value?.toString() ?? ""));
      },
    );
    expect(read).toEqual(["from the bus"]);

    if (kcatAvailable) {
      // Asynchronously: the broker runs in this process and must keep answering meanwhile.
      const kcat = (args: string[], input?: string) =>
        new Promise<string>((resolve, reject) => {
          const child = execFile(
            "kcat",
            ["-b", broker.brokers[0] as string, "-X", "client.id=kcat", ...args],
            { encoding: "utf8", timeout: 20_000 },
            (error, stdout) => (error ? reject(error) : resolve(stdout)),
          );
          child.stdin?.end(input ?? "");
        });
      await kcat(["-P", "-t", topic, "-p", "0"], "from kcat\n");
      const out = await kcat([
        "-C",
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-f",
        "%s\\n",
      ]);
      expect(out).toContain("from kcat");
      await kcat(["-L", "-t", topic]);
      // librdkafka's consumer group (JoinGroup, SyncGroup, OffsetCommit, ...).
      const grouped = await kcat([
        "-G",
        `${groupId}-kcat`,
        "-o",
        "beginning",
        "-e",
        "-f",
        "%s\\n",
        topic,
      ]);
      expect(grouped).toContain("from kcat");
    }
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();

    // client id -> api key -> versions seen.
    const byClient = new Map<string, Map<number, Set<number>>>();
    for (const { clientId, apiKey, apiVersion } of seen) {
      const apis = byClient.get(clientId) ?? new Map<number, Set<number>>();
      byClient.set(clientId, apis);
      const versions = apis.get(apiKey) ?? new Set<number>();
      apis.set(apiKey, versions);
      versions.add(apiVersion);
    }
    const rows: string[] = [];
    const below: string[] = [];
    for (const [clientId, apis] of [...byClient].sort(([a], [b]) => a.localeCompare(b))) {
      for (const [apiKey, versions] of [...apis].sort(([a], [b]) => a - b)) {
        const floor = KAFKA_4_0_MIN_VERSIONS[apiKey] ?? 0;
        const list = [...versions].sort((a, b) => a - b);
        rows.push(
          `${clientId.padEnd(18)} ${`${API_NAMES.get(apiKey) ?? apiKey} (${apiKey})`.padEnd(22)} ` +
            `v${list.join(", v").padEnd(8)} floor v${floor}`,
        );
        for (const version of list) {
          if (version < floor) {
            below.push(`${clientId} ${apiKey}v${version}`);
          }
        }
      }
    }
    console.info(
      `Negotiated versions under the Kafka 4.0 floor:\n${"client".padEnd(18)} ${"API".padEnd(22)} ` +
        `versions  floor\n${rows.join("\n")}`,
    );
    expect(below).toEqual([]);
    const clients = [...byClient.keys()];
    expect(clients).toEqual(
      expect.arrayContaining([
        "kafkajs-admin",
        "kafkajs-producer",
        "kafkajs-consumer",
        "bus-producer",
        "bus-log-reader",
        ...(kcatAvailable ? ["kcat"] : []),
      ]),
    );
    // The bus speaks Produce and Fetch itself; kafkajs covers groups and admin.
    expect(byClient.get("bus-producer")?.get(ApiKey.Produce)).toEqual(new Set([3]));
    expect(byClient.get("bus-log-reader")?.get(ApiKey.Fetch)).toEqual(new Set([4]));
    expect(byClient.get("kafkajs-consumer")?.get(ApiKey.JoinGroup)).toEqual(new Set([5]));
  });
});
