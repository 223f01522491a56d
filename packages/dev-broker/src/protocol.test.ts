import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type RunningBroker, startBroker } from "./index.ts";
import { Reader } from "./protocol/reader.ts";
import { FAST_CONSUMER, kafkaClient, uniqueName, waitFor } from "./test-support/kafka.ts";
import { kafkajsProtocol, kafkajsRequire, RawClient } from "./test-support/raw-client.ts";

const Long = kafkajsRequire("kafkajs/src/utils/long");

/** What kafkajs 2.2.4 negotiates against a real cluster: its maximum version of each API. */
const PRODUCTION_VERSIONS = new Set([
  "0v7", // Produce
  "1v11", // Fetch
  "2v3", // ListOffsets
  "3v6", // Metadata
  "8v5", // OffsetCommit
  "9v4", // OffsetFetch
  "10v2", // FindCoordinator
  "11v5", // JoinGroup
  "12v3", // Heartbeat
  "13v3", // LeaveGroup
  "14v3", // SyncGroup
  "15v2", // DescribeGroups
  "16v2", // ListGroups
  "18v2", // ApiVersions
  "19v3", // CreateTopics
  "20v1", // DeleteTopics
  "22v1", // InitProducerId
  "37v1", // CreatePartitions
  "42v1", // DeleteGroups
]);

describe("version negotiation with kafkajs", () => {
  let broker: RunningBroker;
  beforeAll(async () => {
    broker = await startBroker({ port: 0, minSessionTimeoutMs: 100 });
  });
  afterAll(async () => {
    await broker.stop();
  });

  test("kafkajs uses exactly its production versions for every flow", async () => {
    const kafka = kafkaClient(broker.brokers);
    const admin = kafka.admin();
    await admin.connect();
    const topic = uniqueName("negotiation");
    const groupId = uniqueName("group");
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: "k", value: "v" }] });
    const consumer = kafka.consumer({ groupId, ...FAST_CONSUMER });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let received = 0;
    await consumer.run({
      eachMessage: async () => {
        received++;
      },
    });
    await waitFor(() => received === 1, 10_000, "the message");
    expect((await consumer.describeGroup()).state).toBe("Stable");
    await waitFor(
      () => (broker.stats.requestsByApiVersion["12v3"] ?? 0) > 0,
      5000,
      "an idle consumer to heartbeat",
    );
    await consumer.disconnect();
    await admin.listGroups();
    await admin.fetchOffsets({ groupId, topics: [topic] });
    await admin.fetchTopicOffsets(topic);
    await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
    await admin.deleteGroups([groupId]);
    await admin.deleteTopics({ topics: [topic] });
    await producer.disconnect();
    await admin.disconnect();

    const used = Object.keys(broker.stats.requestsByApiVersion);
    expect(used.filter((key) => !PRODUCTION_VERSIONS.has(key))).toEqual([]);
    expect(new Set(used)).toEqual(PRODUCTION_VERSIONS);
  });
});

describe("raw protocol behaviour", () => {
  let broker: RunningBroker;
  let client: RawClient;
  beforeAll(async () => {
    broker = await startBroker({ port: 0 });
    client = await RawClient.connect(broker.port);
  });
  afterAll(async () => {
    client.close();
    await broker.stop();
  });

  /** A v3+ body after the v2 header's (empty) tagged fields: two COMPACT_STRINGs and no tags. */
  function flexibleApiVersionsBody(name: string, version: string): Buffer {
    const compact = (text: string) => {
      const bytes = Buffer.from(text);
      return Buffer.concat([Buffer.from([bytes.length + 1]), bytes]);
    };
    return Buffer.concat([Buffer.from([0]), compact(name), compact(version), Buffer.from([0])]);
  }

  /** The flexible response body: compact array of ranges with tags, throttle, no tags. */
  function readFlexibleApiVersions(body: Buffer) {
    const r = new Reader(body);
    const errorCode = r.int16();
    const ranges: Array<{ key: number; min: number; max: number }> = [];
    const count = r.unsignedVarint() - 1;
    for (let i = 0; i < count; i++) {
      ranges.push({ key: r.int16(), min: r.int16(), max: r.int16() });
      expect(r.unsignedVarint()).toBe(0);
    }
    const throttleTimeMs = r.int32();
    expect(r.unsignedVarint()).toBe(0); // top-level tagged fields: none at their defaults
    expect(r.remaining).toBe(0);
    return { errorCode, ranges, throttleTimeMs };
  }

  test("ApiVersions v3 and v4 answer in the flexible layout with the supported ranges", async () => {
    for (const version of [3, 4]) {
      const id = client.sendRaw(18, version, flexibleApiVersionsBody("kcat", "1.7.1"));
      const response = await client.nextResponse();
      expect(response.correlationId).toBe(id);
      const answer = readFlexibleApiVersions(response.body);
      expect(answer.errorCode).toBe(0);
      expect(answer.throttleTimeMs).toBe(0);
      expect(answer.ranges).toContainEqual({ key: 18, min: 0, max: 4 });
      // Listed from 0 as Kafka 4.0 lists it (KAFKA-18659); v0-v2 are still refused.
      expect(answer.ranges).toContainEqual({ key: 0, min: 0, max: 7 });
    }
    expect(client.closed).toBe(false);
  });

  test("ApiVersions v3 with a client software name outside Kafka's pattern gets error 42", async () => {
    const id = client.sendRaw(18, 3, flexibleApiVersionsBody("kcat tool", "1.7.1"));
    const response = await client.nextResponse();
    expect(response.correlationId).toBe(id);
    expect(readFlexibleApiVersions(response.body)).toEqual({
      errorCode: 42,
      ranges: [],
      throttleTimeMs: 0,
    });
  });

  test("ApiVersions above v4 gets error 35 in the v0 layout with ApiVersions' own range", async () => {
    const id = client.sendRaw(18, 5, flexibleApiVersionsBody("kcat", "1.7.1"));
    const response = await client.nextResponse();
    expect(response.correlationId).toBe(id);
    const r = new Reader(response.body);
    expect(r.int16()).toBe(35);
    const ranges = r.array((x) => ({ key: x.int16(), min: x.int16(), max: x.int16() }));
    expect(ranges).toEqual([{ key: 18, min: 0, max: 4 }]);
    expect(r.remaining).toBe(0);
  });

  test("kafkajs's ApiVersions v2 decoder accepts the advertised table", async () => {
    const { request, response } = kafkajsProtocol("apiVersions", 2);
    const decoded = await client.roundTrip<{
      apiVersions: Array<{ apiKey: number; minVersion: number; maxVersion: number }>;
    }>(request({}), response);
    const max = Object.fromEntries(decoded.apiVersions.map((v) => [v.apiKey, v.maxVersion]));
    expect(max).toMatchObject({ 0: 7, 1: 11, 2: 3, 3: 6, 8: 5, 9: 4, 10: 2, 11: 5, 12: 3 });
    expect(max).toMatchObject({ 13: 3, 14: 3, 18: 4, 19: 3, 20: 1, 22: 1, 37: 1 });
    expect(decoded.apiVersions.map((v) => v.apiKey)).not.toContain(17); // no SASL
    expect(decoded.apiVersions.map((v) => v.apiKey)).not.toContain(24); // no transactions
  });

  test("an unsupported API or version is answered with error 35 and the connection stays open", async () => {
    for (const [apiKey, version] of [
      [50, 0], // DescribeUserScramCredentials: not implemented
      [0, 99], // Produce at a version nobody speaks
      [0, 2], // Produce below record batch v2
      [24, 0], // AddPartitionsToTxn: transactions are a non-goal
    ] as const) {
      const id = client.sendRaw(apiKey, version, Buffer.alloc(0));
      const response = await client.nextResponse();
      expect(response.correlationId).toBe(id);
      expect(response.body.readInt16BE(0)).toBe(35);
    }
    const { request, response } = kafkajsProtocol("apiVersions", 2);
    await expect(client.roundTrip(request({}), response)).resolves.toBeTruthy();
    expect(client.closed).toBe(false);
  });

  test("acks=0 produce writes no response but keeps response order", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("acks0");
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
    const produce = kafkajsProtocol("produce", 7);
    client.send(
      produce.request({
        acks: 0,
        timeout: 1000,
        topicData: [{ topic, partitions: [{ partition: 0, messages: [{ value: "x" }] }] }],
      }),
    );
    const apiVersions = kafkajsProtocol("apiVersions", 2);
    const id = await client.send(apiVersions.request({}));
    expect((await client.nextResponse()).correlationId).toBe(id);
    const offsets = await admin.fetchTopicOffsets(topic);
    expect(offsets[0]?.high).toBe("1");
    await admin.disconnect();
  });

  test("idempotent producer: a replayed batch is not appended twice, a gap is refused", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("idempotent");
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });

    const init = kafkajsProtocol("initProducerId", 1);
    const { producerId, producerEpoch } = await client.roundTrip<{
      producerId: string;
      producerEpoch: number;
    }>(init.request({ transactionalId: null, transactionTimeout: 30000 }), init.response);
    expect(Number(producerId)).toBeGreaterThanOrEqual(0);

    const produce = kafkajsProtocol("produce", 7);
    const send = async (firstSequence: number, values: string[]) => {
      const id = await client.send(
        produce.request({
          acks: -1,
          timeout: 1000,
          producerId: Long.fromString(producerId),
          producerEpoch,
          topicData: [
            {
              topic,
              partitions: [
                { partition: 0, firstSequence, messages: values.map((value) => ({ value })) },
              ],
            },
          ],
        }),
      );
      const response = await client.nextResponse();
      expect(response.correlationId).toBe(id);
      const decoded = (await produce.response.decode(response.body)) as {
        topics: Array<{ partitions: Array<{ errorCode: number; baseOffset: string }> }>;
      };
      return decoded.topics[0]?.partitions[0];
    };

    expect(await send(0, ["a", "b"])).toMatchObject({ errorCode: 0, baseOffset: "0" });
    expect(await send(0, ["a", "b"])).toMatchObject({ errorCode: 0, baseOffset: "0" }); // replay
    expect(await send(2, ["c"])).toMatchObject({ errorCode: 0, baseOffset: "2" });
    expect((await send(7, ["gap"]))?.errorCode).toBe(45); // OUT_OF_ORDER_SEQUENCE_NUMBER
    expect((await admin.fetchTopicOffsets(topic))[0]?.high).toBe("3");
    await admin.disconnect();
  });

  test("a frame arriving one byte at a time is still answered", async () => {
    const raw = await RawClient.connect(broker.port);
    const header = Buffer.alloc(14);
    header.writeInt32BE(10, 0);
    header.writeInt16BE(18, 4);
    header.writeInt16BE(2, 6);
    header.writeInt32BE(77, 8);
    header.writeInt16BE(0, 12);
    for (let i = 0; i < header.length; i++) {
      raw.writeBytes(header.subarray(i, i + 1));
      await new Promise((r) => setImmediate(r));
    }
    const response = await raw.nextResponse();
    expect(response.correlationId).toBe(77);
    expect(response.body.readInt16BE(0)).toBe(0);
    raw.close();
  });
});
