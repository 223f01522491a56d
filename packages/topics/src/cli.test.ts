import { contracts, parkedTopicOf, SINGLE_NODE_REPLICATION, topicPlan } from "@th/contracts";
import { startTestKafka, type TestKafka } from "@th/test-stores";
import { type Admin, ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "./cli.ts";

let kafka: TestKafka;
let admin: Admin;
let env: Record<string, string>;

function run(argv: string[], extraEnv: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return main(
    argv,
    { ...env, ...extraEnv },
    { out: (l) => out.push(l), err: (l) => err.push(l) },
  ).then((code) => ({ code, out, err }));
}

async function configOf(topic: string, name: string): Promise<string | undefined> {
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: [name] }],
  });
  return described.resources[0]?.configEntries[0]?.configValue;
}

async function partitionsOf(topic: string): Promise<number> {
  const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
  return metadata.topics[0]?.partitions.length ?? 0;
}

beforeAll(async () => {
  kafka = await startTestKafka();
  admin = new Kafka({
    brokers: kafka.brokers,
    clientId: "topics-test",
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  env = {
    KAFKA_BROKERS: kafka.brokers.join(","),
    TOPICS_REPLICATION_FACTOR: "1",
    TOPICS_MIN_INSYNC_REPLICAS: "1",
  };
});
afterAll(async () => {
  await admin.disconnect();
  await kafka.stop();
});

describe("npm run topics", () => {
  const plan = topicPlan(SINGLE_NODE_REPLICATION);

  it("--plan lists every planned topic missing from an empty cluster and creates nothing", async () => {
    const { code, out } = await run(["--plan"]);
    expect(code).toBe(0);
    for (const entry of plan) {
      expect(out).toContainEqual(
        expect.stringMatching(new RegExp(`^\\+ create ${entry.topic.replaceAll(".", "\\.")}: `)),
      );
    }
    expect(out.at(-1)).toBe(
      `--apply would create ${plan.length} topics and grow 0; nothing is left to an operator`,
    );
    expect(await admin.listTopics()).not.toContain("leadview.recorded");
  });

  it("--apply creates the plan's topics with their partitions and settings, then matches it", async () => {
    const applied = await run(["--apply"]);
    expect(applied.code).toBe(0);
    expect(applied.out).toContain(`applied ${plan.length} changes`);
    const topics = await admin.listTopics();
    for (const entry of plan) {
      expect(topics).toContain(entry.topic);
    }
    expect(await partitionsOf("leadview.recorded")).toBe(contracts.leadViewRecorded.partitions);
    expect(await partitionsOf(parkedTopicOf("leadview.recorded"))).toBe(1);
    expect(await configOf("delivery.retry.5m", "retention.ms")).toBe(String(86_400_000));
    expect(await configOf("delivery.dead-letter", "retention.bytes")).toBe("-1");
    expect(await configOf("leadview.recorded", "cleanup.policy")).toBe("delete");

    const again = await run(["--plan"]);
    expect(again.out).toEqual([
      `topic plan: ${plan.length} topics`,
      "the cluster matches the plan",
    ]);
    const reapplied = await run(["--apply"]);
    expect(reapplied.out).toContain("nothing to create or grow");
  });

  it("grows a topic with too few partitions, and reports what it never changes", async () => {
    // As an older release or an operator left them: fewer partitions, a week of retry retention.
    await admin.deleteTopics({ topics: ["match.found", "delivery.retry.1s"] });
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: "match.found", numPartitions: 4 },
        {
          topic: "delivery.retry.1s",
          numPartitions: 20,
          configEntries: [{ name: "retention.ms", value: "604800000" }],
        },
      ],
    });

    const planned = await run(["--plan"]);
    expect(planned.out).toContain("~ grow match.found: 4 -> 12 partitions");
    expect(planned.out).toContain(
      "! delivery.retry.1s: 20 partitions, the plan has 12 (never shrunk)",
    );
    expect(planned.out).toContain(
      "! delivery.retry.1s: retention.ms=604800000, the plan has 86400000",
    );
    expect(await partitionsOf("match.found")).toBe(4);

    const applied = await run(["--apply"]);
    expect(applied.code).toBe(0);
    expect(applied.out).toContain("~ grew match.found: 4 -> 12 partitions");
    expect(await partitionsOf("match.found")).toBe(12);
    // Never shrunk, never re-configured: both are left for an operator, and said so.
    expect(await partitionsOf("delivery.retry.1s")).toBe(20);
    expect(await configOf("delivery.retry.1s", "retention.ms")).toBe("604800000");
    expect(applied.out).toContainEqual(expect.stringMatching(/differences left to an operator/));
  });

  it("never deletes a topic the plan does not name", async () => {
    await admin.createTopics({ topics: [{ topic: "someone.elses", numPartitions: 1 }] });
    await run(["--apply"]);
    expect(await admin.listTopics()).toContain("someone.elses");
  });

  it("reports a cluster with fewer replicas than the production plan", async () => {
    const { code, out } = await run(["--plan"], {
      TOPICS_REPLICATION_FACTOR: "3",
      TOPICS_MIN_INSYNC_REPLICAS: "2",
    });
    expect(code).toBe(0);
    expect(out).toContain(
      "! leadview.recorded: replication factor 1, the plan has 3 (a partition reassignment changes it)",
    );
    expect(out).toContain("! leadview.recorded: min.insync.replicas=1, the plan has 2");
  });

  it("refuses usage and settings it cannot honour in one line, before connecting", async () => {
    expect((await run([])).code).toBe(2);
    expect((await run(["--plan", "--apply"])).code).toBe(2);
    const bad = await run(["--plan"], { TOPICS_MIN_INSYNC_REPLICAS: "3" });
    expect(bad.code).toBe(2);
    expect(bad.err).toEqual([
      "invalid plan: min.insync.replicas must be between 1 and the replication factor (1), got 3",
    ]);
    const nobody = await run(["--plan"], { KAFKA_BROKERS: "127.0.0.1:1" });
    expect(nobody.code).toBe(1);
    expect(nobody.err[0]).toMatch(
      /^Kafka connection failed: KAFKA_BROKERS: no Kafka broker answers at 127.0.0.1:1/,
    );
  });
});
