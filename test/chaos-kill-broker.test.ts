// kill -9 of the broker while the dispatcher delivers, then the broker started again on its log
// directory (the dev broker keeps its log, offsets and groups on disk and syncs an acks=all
// write before acknowledging it): the dispatcher stays up, its consumers rejoin, matches
// published after the restart are delivered, and every webhook id arrives.
import { type BrokerProcess, startBrokerProcess } from "@th/dev-broker/testing";
import { describe, expect, it } from "vitest";
import { deliveryCounts, recordFault } from "./support/chaos-report.ts";
import { useWebhookStack } from "./support/fault-fixtures.ts";
import { waitFor } from "./support/webhook-stack.ts";

let broker: BrokerProcess;
const fault = useWebhookStack({
  receiver: () => ({ status: 200, delayMs: 10 }),
  before: async () => {
    broker = await startBrokerProcess();
    return { brokers: broker.brokers };
  },
  after: async () => {
    await broker?.destroy();
  },
  closeMayFail: true,
});

describe("kill -9 and restart of the broker during dispatch", () => {
  it("leaves the dispatcher running; it rejoins, delivers what comes after, and none is lost", async () => {
    const tenant = "tn_kill_broker";
    const {
      child,
      exited,
      matches: before,
    } = await fault.deliveriesUnderWay({
      tenant,
      watchlist: "wl_broker",
      count: 500,
      underWay: 40,
      leaseMs: 3000,
    });
    const { backAt } = await fault.awayForTwoSeconds(
      () => broker.kill(),
      () => broker.start(),
    );
    const after = Array.from({ length: 100 }, () => fault.stack.match(tenant, "wl_broker"));
    await waitFor(
      () =>
        fault.stack.publishMatches(after).then(
          () => true,
          () => false,
        ),
      { timeoutMs: 20_000, intervalMs: 250, what: "a publish once the broker is back" },
    );
    const afterIds = new Set(after.map((match) => match.match_id));
    await waitFor(
      () =>
        exited() ??
        fault.receiver.received.some((request) =>
          afterIds.has((JSON.parse(request.body) as { event_id: string }).event_id),
        ),
      { timeoutMs: 30_000, what: "a match published after the restart delivered" },
    );
    const recoveryMs = Date.now() - backAt;
    expect(exited()).toBeUndefined();

    const total = before.length + after.length;
    const tally = await fault.expectEveryDelivery(tenant, total, exited);
    expect(recoveryMs).toBeLessThan(30_000);
    recordFault({
      fault: "kill -9 and restart of the broker during dispatch",
      ...deliveryCounts(total, tally),
      recoveryMs,
    });
    child.kill("SIGTERM");
  }, 150_000);
});
