// The Kafka 4.0 protocol floor (KIP-896): versions Apache Kafka 4.0.0 removed are neither
// advertised nor accepted, unless the broker is started with protocolFloor "none".
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SUPPORTED_APIS } from "./apis/index.ts";
import { type RunningBroker, startBroker } from "./index.ts";
import { ApiKey } from "./protocol/api-keys.ts";
import { KAFKA_4_0_MIN_VERSIONS, versionTable } from "./protocol/floor.ts";
import { kafkajsProtocol, RawClient } from "./test-support/raw-client.ts";

const UNSUPPORTED_VERSION = 35;

describe("version table", () => {
  test("every served API starts at Kafka 4.0's minimum at the lowest", () => {
    const table = versionTable(SUPPORTED_APIS, "kafka-4.0");
    for (const api of SUPPORTED_APIS) {
      const range = table.get(api.apiKey);
      expect(range?.minVersion).toBe(
        Math.max(api.minVersion, KAFKA_4_0_MIN_VERSIONS[api.apiKey] ?? 0),
      );
      expect(range?.maxVersion).toBe(api.maxVersion);
    }
    expect(table.get(ApiKey.JoinGroup)).toMatchObject({ minVersion: 2, advertisedMinVersion: 2 });
    expect(table.get(ApiKey.CreateTopics)).toMatchObject({
      minVersion: 2,
      advertisedMinVersion: 2,
    });
    expect(table.get(ApiKey.DeleteTopics)).toMatchObject({
      minVersion: 1,
      advertisedMinVersion: 1,
    });
    // Kafka 4.0 lists Produce from 0 but refuses v0-v2 (KAFKA-18659).
    expect(table.get(ApiKey.Produce)).toMatchObject({ minVersion: 3, advertisedMinVersion: 0 });
  });

  test("with no floor, whatever is implemented is accepted", () => {
    const table = versionTable(SUPPORTED_APIS, "none");
    expect(table.get(ApiKey.JoinGroup)).toMatchObject({ minVersion: 0, advertisedMinVersion: 0 });
    expect(table.get(ApiKey.CreateTopics)).toMatchObject({ minVersion: 0 });
    expect(table.get(ApiKey.Produce)).toMatchObject({ minVersion: 3, advertisedMinVersion: 3 });
  });
});

/** Requests below Kafka 4.0's minimum that the broker's code could otherwise serve. */
const BELOW_FLOOR = [
  ["joinGroup", 0, ApiKey.JoinGroup],
  ["joinGroup", 1, ApiKey.JoinGroup],
  ["createTopics", 0, ApiKey.CreateTopics],
  ["createTopics", 1, ApiKey.CreateTopics],
  ["deleteTopics", 0, ApiKey.DeleteTopics],
] as const;

let groups = 0;
const ARGS: Record<string, () => unknown> = {
  joinGroup: () => ({
    // A group of its own per request: a second member would wait for the first one's rebalance.
    groupId: `floor-group-${groups++}`,
    sessionTimeout: 10_000,
    rebalanceTimeout: 10_000,
    memberId: "",
    protocolType: "consumer",
    groupProtocols: [{ name: "RoundRobinAssigner", metadata: Buffer.alloc(0) }],
  }),
  createTopics: () => ({ topics: [{ topic: "floor-topic", numPartitions: 1 }], timeout: 5000 }),
  deleteTopics: () => ({ topics: ["floor-topic"], timeout: 5000 }),
};

async function firstErrorCode(client: RawClient, api: string, version: number): Promise<number> {
  const { request } = kafkajsProtocol(api, version);
  const id = await client.send(request((ARGS[api] as () => unknown)()));
  const response = await client.nextResponse(15_000);
  expect(response.correlationId).toBe(id);
  // CreateTopics/DeleteTopics carry the error per topic; JoinGroup v0-v1 starts with it. A
  // refused version is a body holding error_code 35 alone.
  return response.body.length === 2 ? response.body.readInt16BE(0) : 0;
}

describe("the floor on the wire", () => {
  let floored: RunningBroker;
  let open: RunningBroker;
  beforeAll(async () => {
    [floored, open] = await Promise.all([
      startBroker({ port: 0 }),
      startBroker({ port: 0, protocolFloor: "none", minSessionTimeoutMs: 100 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([floored.stop(), open.stop()]);
  });

  test.each(BELOW_FLOOR)("%s v%i is refused with UNSUPPORTED_VERSION", async (api, version) => {
    const client = await RawClient.connect(floored.port);
    expect(await firstErrorCode(client, api, version)).toBe(UNSUPPORTED_VERSION);
    expect(client.closed).toBe(false);
    client.close();
  });

  test.each(BELOW_FLOOR)("%s v%i is served when the floor is off", async (api, version) => {
    const client = await RawClient.connect(open.port);
    expect(await firstErrorCode(client, api, version)).not.toBe(UNSUPPORTED_VERSION);
    client.close();
  });

  test("removed versions the broker never implemented (Produce v2, Fetch v3, ...) are refused", async () => {
    const client = await RawClient.connect(floored.port);
    for (const [apiKey, version] of [
      [ApiKey.Produce, 2],
      [ApiKey.Fetch, 3],
      [ApiKey.ListOffsets, 0],
      [ApiKey.OffsetCommit, 1],
      [ApiKey.OffsetFetch, 0],
    ] as const) {
      client.sendRaw(apiKey, version, Buffer.alloc(0));
      expect((await client.nextResponse()).body.readInt16BE(0)).toBe(UNSUPPORTED_VERSION);
    }
    client.close();
  });

  test("ApiVersions advertises the floor: what a Kafka 4.0 cluster lists as each minimum", async () => {
    const client = await RawClient.connect(floored.port);
    const { request, response } = kafkajsProtocol("apiVersions", 2);
    const decoded = await client.roundTrip<{
      apiVersions: Array<{ apiKey: number; minVersion: number; maxVersion: number }>;
    }>(request({}), response);
    const min = Object.fromEntries(decoded.apiVersions.map((v) => [v.apiKey, v.minVersion]));
    expect(min).toEqual({
      0: 0, // Produce: listed from 0, refused below 3
      1: 4,
      2: 1,
      3: 1, // Metadata: Kafka accepts 0; the broker implements 1+
      8: 2,
      9: 1,
      10: 0,
      11: 2,
      12: 0,
      13: 0,
      14: 0,
      15: 0,
      16: 0,
      18: 0,
      19: 2,
      20: 1,
      22: 0,
      32: 1, // DescribeConfigs: Kafka 4.0 removed v0
      37: 0,
      42: 0,
    });
    client.close();
  });
});
