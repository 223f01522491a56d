import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Consumer } from "kafkajs";
import { describe, expect, test } from "vitest";
import {
  brokerFixture,
  FAST_CONSUMER,
  trackAssignment,
  uniqueName,
  waitFor,
} from "./test-support/kafka.ts";

const cluster = brokerFixture();
const createTopic = (partitions: number) => cluster.createTopic("group-topic", partitions);

async function produce(topic: string, from: number, count: number): Promise<void> {
  const producer = cluster.kafka.producer();
  await producer.connect();
  const messages = Array.from({ length: count }, (_, i) => ({
    key: `key-${from + i}`,
    value: `${from + i}`,
  }));
  await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();
}

interface Member {
  consumer: Consumer;
  assignment: { partitions: number[] };
}

/** Starts a member that records every value it sees into the shared `seen` counter map. */
async function startMember(
  topic: string,
  groupId: string,
  seen: Map<string, number>,
  options: { perMessageDelayMs?: number } = {},
): Promise<Member> {
  const consumer = cluster.kafka.consumer({ groupId, ...FAST_CONSUMER });
  const assignment = trackAssignment(consumer, topic);
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const value = String(message.value);
      seen.set(value, (seen.get(value) ?? 0) + 1);
      if (options.perMessageDelayMs) {
        await new Promise((r) => setTimeout(r, options.perMessageDelayMs));
      }
    },
  });
  return { consumer, assignment };
}

function expectExactlyOnce(seen: Map<string, number>, total: number): void {
  const duplicates = [...seen].filter(([, n]) => n !== 1);
  expect(duplicates).toEqual([]);
  expect(seen.size).toBe(total);
}

const sizes = (members: Member[]): number[] =>
  members.map((m) => m.assignment.partitions.length).sort();

describe("consumer groups", () => {
  test("two, then three consumers share 6 partitions; every message consumed exactly once", async () => {
    const topic = await createTopic(6);
    const groupId = uniqueName("g6");
    const seen = new Map<string, number>();
    const members = [
      await startMember(topic, groupId, seen),
      await startMember(topic, groupId, seen),
    ];
    await waitFor(() => sizes(members).join() === "3,3", 15_000, "a 3/3 split");
    const all = members.flatMap((m) => m.assignment.partitions).sort();
    expect(all).toEqual([0, 1, 2, 3, 4, 5]);
    await produce(topic, 0, 300);
    await waitFor(() => seen.size === 300, 15_000, "300 messages");

    members.push(await startMember(topic, groupId, seen));
    await waitFor(() => sizes(members).join() === "2,2,2", 15_000, "a 2/2/2 split");
    await produce(topic, 300, 300);
    await waitFor(() => seen.size === 600, 15_000, "600 messages");
    await new Promise((r) => setTimeout(r, 300)); // let any redelivery surface before asserting
    expectExactlyOnce(seen, 600);
    await Promise.all(members.map((m) => m.consumer.disconnect()));
  });

  test("three consumers share 12 partitions 4/4/4, exactly once", async () => {
    const topic = await createTopic(12);
    const groupId = uniqueName("g12");
    const seen = new Map<string, number>();
    const members = await Promise.all([0, 1, 2].map(() => startMember(topic, groupId, seen)));
    await waitFor(() => sizes(members).join() === "4,4,4", 15_000, "a 4/4/4 split");
    await produce(topic, 0, 1200);
    await waitFor(() => seen.size === 1200, 15_000, "1200 messages");
    await new Promise((r) => setTimeout(r, 300));
    expectExactlyOnce(seen, 1200);
    const describe = await members[0]?.consumer.describeGroup();
    expect(describe?.state).toBe("Stable");
    expect(describe?.members).toHaveLength(3);
    await Promise.all(members.map((m) => m.consumer.disconnect()));
  });

  test("a member that leaves has its partitions taken over", async () => {
    const topic = await createTopic(6);
    const groupId = uniqueName("leave");
    const seen = new Map<string, number>();
    const a = await startMember(topic, groupId, seen);
    const b = await startMember(topic, groupId, seen);
    await waitFor(() => sizes([a, b]).join() === "3,3", 15_000, "a 3/3 split");
    await b.consumer.disconnect();
    await waitFor(() => a.assignment.partitions.length === 6, 15_000, "survivor owns 6");
    await produce(topic, 0, 120);
    await waitFor(() => seen.size === 120, 15_000, "120 messages");
    expectExactlyOnce(seen, 120);
    await a.consumer.disconnect();
  });

  test("a SIGKILLed member is expired after its session timeout and its partitions move", async () => {
    const sessionTimeout = 2000;
    const topic = await createTopic(6);
    const groupId = uniqueName("kill");
    const seen = new Map<string, number>();
    const survivor = await startMember(topic, groupId, seen);
    await waitFor(() => survivor.assignment.partitions.length === 6, 15_000, "first member owns 6");

    const script = fileURLToPath(new URL("./test-support/consumer-child.ts", import.meta.url));
    const child: ChildProcess = spawn(
      process.execPath,
      [script, cluster.broker.brokers[0] as string, topic, groupId, String(sessionTimeout)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let childPartitions: number[] = [];
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      const event = JSON.parse(line) as { event: string; partitions?: number[] };
      if (event.event === "assigned") {
        childPartitions = event.partitions ?? [];
      }
    });
    try {
      await waitFor(
        () => childPartitions.length === 3 && survivor.assignment.partitions.length === 3,
        15_000,
        "a 3/3 split with the child",
      );
      const killedAt = Date.now();
      child.kill("SIGKILL");
      await waitFor(() => survivor.assignment.partitions.length === 6, 15_000, "takeover");
      const takeoverMs = Date.now() - killedAt;
      // The broker only notices a crash through the session timeout (minus the last heartbeat gap).
      expect(takeoverMs).toBeGreaterThanOrEqual(sessionTimeout - 500);
      await produce(topic, 0, 60);
      await waitFor(() => seen.size === 60, 15_000, "60 messages after the takeover");
      expectExactlyOnce(seen, 60);
    } finally {
      child.kill("SIGKILL");
      await survivor.consumer.disconnect();
    }
  });

  test("offsets committed during a rebalance are kept: no redelivery of processed messages", async () => {
    const topic = await createTopic(4);
    const groupId = uniqueName("commit-rebalance");
    await produce(topic, 0, 400);
    const seen = new Map<string, number>();
    const commitsBefore = cluster.broker.stats.commitsDuringRebalance;
    const a = await startMember(topic, groupId, seen, { perMessageDelayMs: 2 });
    await waitFor(() => seen.size >= 40, 15_000, "the first member to be mid-stream");
    const b = await startMember(topic, groupId, seen, { perMessageDelayMs: 2 });
    await waitFor(() => seen.size === 400, 20_000, "all 400 messages");
    await new Promise((r) => setTimeout(r, 300));
    expect(cluster.broker.stats.commitsDuringRebalance).toBeGreaterThan(commitsBefore);
    expectExactlyOnce(seen, 400);
    await Promise.all([a.consumer.disconnect(), b.consumer.disconnect()]);
  });

  test("committed offsets survive a consumer restart", async () => {
    const topic = await createTopic(3);
    const groupId = uniqueName("restart");
    const first = new Map<string, number>();
    const a = await startMember(topic, groupId, first);
    await produce(topic, 0, 30);
    await waitFor(() => first.size === 30, 15_000, "30 messages");
    await a.consumer.disconnect();

    await produce(topic, 30, 10);
    const second = new Map<string, number>();
    const b = await startMember(topic, groupId, second);
    await waitFor(() => second.size === 10, 15_000, "the 10 new messages");
    await new Promise((r) => setTimeout(r, 300));
    expect([...second.keys()].map(Number).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 10 }, (_, i) => 30 + i),
    );
    await b.consumer.disconnect();
  });

  test("admin: listGroups, describeGroups, setOffsets only on an empty group, deleteGroups", async () => {
    const topic = await createTopic(2);
    const groupId = uniqueName("admin-group");
    const seen = new Map<string, number>();
    const m = await startMember(topic, groupId, seen);
    await waitFor(() => m.assignment.partitions.length === 2, 15_000, "assignment");
    const admin = cluster.kafka.admin();
    await admin.connect();
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).toContain(groupId);
    const described = await admin.describeGroups([groupId]);
    expect(described.groups[0]).toMatchObject({
      groupId,
      state: "Stable",
      protocol: "RoundRobinAssigner",
    });
    await expect(admin.deleteGroups([groupId])).rejects.toThrow();
    await expect(
      admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: "5" }] }),
    ).rejects.toThrow();
    await m.consumer.disconnect();
    await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: "5" }] });
    const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
    expect(offsets[0]?.partitions.find((p) => p.partition === 0)?.offset).toBe("5");
    await admin.deleteGroups([groupId]);
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).not.toContain(groupId);
    await admin.disconnect();
  });
});
