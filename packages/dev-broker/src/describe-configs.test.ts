import { ConfigResourceTypes } from "kafkajs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type RunningBroker, startBroker } from "./index.ts";
import { kafkaClient, uniqueName } from "./test-support/kafka.ts";

let broker: RunningBroker;
beforeAll(async () => {
  broker = await startBroker({ port: 0, retentionMs: 3_600_000 });
});
afterAll(async () => {
  await broker.stop();
});

describe("DescribeConfigs", () => {
  test("answers a topic's own settings and the broker's defaults for the rest", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("configs");
    await admin.createTopics({
      topics: [
        {
          topic,
          configEntries: [
            { name: "retention.ms", value: "86400000" },
            { name: "cleanup.policy", value: "delete" },
          ],
        },
      ],
    });
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: topic,
          configNames: ["retention.ms", "cleanup.policy", "segment.ms", "no.such.setting"],
        },
      ],
    });
    const entries = described.resources[0]?.configEntries ?? [];
    expect(entries.map((e) => [e.configName, e.configValue, e.isDefault]).sort()).toEqual([
      ["cleanup.policy", "delete", false],
      ["retention.ms", "86400000", false],
      ["segment.ms", String(7 * 86_400_000), true],
    ]);

    const all = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
    });
    const byName = new Map(
      (all.resources[0]?.configEntries ?? []).map((e) => [e.configName, e.configValue]),
    );
    expect(byName.get("retention.bytes")).toBe("-1");
    expect(byName.get("min.insync.replicas")).toBe("1");
    await admin.disconnect();
  });

  test("a broker-wide default shows where the topic sets nothing", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("defaults");
    await admin.createTopics({ topics: [{ topic }] });
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ["retention.ms"] }],
    });
    expect(described.resources[0]?.configEntries[0]).toMatchObject({
      configName: "retention.ms",
      configValue: "3600000",
      isDefault: true,
    });
    await admin.disconnect();
  });

  test("refuses an unknown topic and resources other than topics", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    await expect(
      admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: uniqueName("absent") }],
      }),
    ).rejects.toThrow(/does not host this topic/);
    await expect(
      admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.BROKER, name: "0" }],
      }),
    ).rejects.toThrow();
    await admin.disconnect();
  });
});
