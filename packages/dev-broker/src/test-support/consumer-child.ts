// A consumer-group member in its own process, so tests can SIGKILL it (no LeaveGroup is sent).
// Usage: node consumer-child.ts <broker> <topic> <groupId> <sessionTimeoutMs>
// Writes one JSON line per event to stdout.
import { Kafka, logLevel } from "kafkajs";

const [broker, topic, groupId, sessionTimeout] = process.argv.slice(2);
if (broker === undefined || topic === undefined || groupId === undefined) {
  process.stderr.write("usage: consumer-child.ts <broker> <topic> <groupId> <sessionTimeoutMs>\n");
  process.exit(2);
}
const kafka = new Kafka({
  clientId: "child-consumer",
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 100, retries: 8 },
});
const consumer = kafka.consumer({
  groupId,
  maxWaitTimeInMs: 200,
  heartbeatInterval: 150,
  sessionTimeout: Number(sessionTimeout ?? 3000),
  retry: { initialRetryTime: 100, retries: 8 },
});
const emit = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};
consumer.on(consumer.events.GROUP_JOIN, (e) => {
  emit({ event: "assigned", partitions: e.payload.memberAssignment[topic] ?? [] });
});
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
await consumer.run({
  eachMessage: async ({ partition, message }) => {
    emit({ event: "message", partition, offset: message.offset, value: String(message.value) });
  },
});
