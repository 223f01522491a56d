// A consumer process that dies the hard way (SIGKILL) right after its batch handler's effect,
// before the bus could resolve or commit the batch: what a crash between effect and commit
// looks like to the group. The effect here is a line on stdout naming the offsets it handled.
// Usage: node crashing-consumer.ts <brokers> <topic> <group>
import { contracts } from "@th/contracts";
import { createLogger } from "@th/telemetry";
import { Bus, onBatch } from "../bus.ts";

const [brokers, topic, group] = process.argv.slice(2) as [string, string, string];
const bus = new Bus({
  brokers: [brokers],
  clientId: "bus-crash-test",
  logger: createLogger({ service: "bus-crash-test", level: "silent" }),
  consumerTimings: { sessionTimeout: 6000, heartbeatInterval: 300, maxWaitTimeInMs: 100 },
});
await bus.consume({
  group,
  subscriptions: [
    onBatch({ ...contracts.leadViewRecorded, topic }, async (records) => {
      process.stdout.write(`${JSON.stringify(records.map((record) => record.offset))}\n`);
      process.kill(process.pid, "SIGKILL");
      await new Promise(() => {});
      return undefined;
    }),
  ],
});
