// Lead reads while the broker is down: a read answers 503 `unavailable` within the publish bound
// (2 s) with Retry-After, its request id and the six limit headers; its reservation is given back;
// and neither it nor a read whose client went away is published once the broker is back.

import { request as httpRequest } from "node:http";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { Bus } from "@th/bus";
import { contracts } from "@th/contracts";
import { buildApp as buildGateway } from "@th/gateway/app";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCounts, recordFault } from "./support/chaos-report.ts";
import {
  customTenant,
  leadViewsRemaining,
  replayed,
  restartableBroker,
  timedReads,
  useEdgeStack,
} from "./support/fault-fixtures.ts";
import { SIX_HEADERS } from "./support/limit-headers.ts";

const reads = useEdgeStack();
let broker: Awaited<ReturnType<typeof restartableBroker>>;
let gateway: Awaited<ReturnType<typeof buildGateway>>;

beforeAll(async () => {
  // The gateway under test records lead-views on a broker of its own, which the test stops and
  // starts again on the same port and log directory, as a broker restart would.
  broker = await restartableBroker(reads.stack, "outage-gateway", [
    contracts.leadViewRecorded,
    contracts.leadViewVoided,
  ]);
  gateway = await buildGateway({
    ...reads.stack.harness,
    bus: broker.bus,
    config: reads.stack.gatewayConfig,
  });
  await gateway.http?.listen({ port: 0, host: "127.0.0.1" });
});

afterAll(async () => {
  await gateway?.http?.close();
  await broker?.close();
});

/** The request ids of every void on the private broker's topic. */
const voidedRequestIds = async () =>
  (await replayed(broker.bus, contracts.leadViewVoided)).map((voided) => voided.request_id);

/** The request ids of every lead-view on the private broker's topic. */
const recordedRequestIds = async () =>
  (await replayed(broker.bus, contracts.leadViewRecorded)).map((view) => view.request_id);

async function waitUntil(probe: () => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) {
      throw new Error("timed out");
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A TCP proxy to the broker that holds every byte it gets until `release()`, then pipes. */
async function holdingProxy(target: number) {
  let holding = true;
  const pending: { socket: Socket; chunks: Buffer[] }[] = [];
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on("error", () => {});
    const entry = { socket, chunks: [] as Buffer[] };
    if (holding) {
      pending.push(entry);
      socket.on("data", (chunk: Buffer) => {
        if (holding) {
          entry.chunks.push(chunk);
        }
      });
    } else {
      pipe(entry);
    }
  });
  function pipe(entry: { socket: Socket; chunks: Buffer[] }) {
    const upstream = connect({ host: "127.0.0.1", port: target });
    sockets.push(upstream);
    upstream.on("error", () => entry.socket.destroy());
    entry.socket.removeAllListeners("data");
    for (const chunk of entry.chunks) {
      upstream.write(chunk);
    }
    entry.socket.pipe(upstream).pipe(entry.socket);
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    held: () => pending.length,
    release() {
      holding = false;
      for (const entry of pending.splice(0)) {
        pipe(entry);
      }
    },
    close() {
      for (const socket of sockets) {
        socket.destroy();
      }
      server.close();
    },
  };
}

describe("a lead read while the broker is down", () => {
  it("answers 503 unavailable within 2.5 s with Retry-After, its request id and the six headers, charges nothing, and is never published later", async () => {
    const { key } = await customTenant(reads.stack, 10);
    // Every read of this case: its request id, status and time to answer.
    const { answers, read } = timedReads(reads.stack, key, gateway);
    const before = await read(reads.folios[0] as string, "outage-read-ok-1");
    expect(before.statusCode).toBe(200);
    expect(leadViewsRemaining(before)).toBe(9);

    await broker.stop();
    const started = Date.now();
    const refused = await read(reads.folios[1] as string, "outage-read-refused-1");
    const ms = Date.now() - started;
    expect(refused.statusCode).toBe(503);
    expect(ms).toBeLessThan(2_500);
    const body = refused.json();
    expect(body.error).toBe("unavailable");
    expect(body.request_id).toBe("outage-read-refused-1");
    expect(refused.headers["x-request-id"]).toBe("outage-read-refused-1");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    for (const header of SIX_HEADERS) {
      expect(refused.headers[header], header).toBeDefined();
    }
    expect(leadViewsRemaining(refused)).toBe(9);

    // The broker comes back within the producer's own retry window: a publish that went on
    // retrying would land now.
    await broker.start();
    let after = await read(reads.folios[2] as string, "outage-read-ok-2");
    for (let i = 0; i < 20 && after.statusCode !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      after = await read(reads.folios[2] as string, `outage-read-ok-2-${i}`);
    }
    expect(after.statusCode).toBe(200);
    expect(leadViewsRemaining(after)).toBe(8);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const ids = await recordedRequestIds();
    expect(ids).toContain("outage-read-ok-1");
    expect(ids).not.toContain("outage-read-refused-1");
    // Its void, kept while the broker was away, is published once it is back (decision 0190).
    const deadline = Date.now() + 20_000;
    while (!(await voidedRequestIds()).includes("outage-read-refused-1")) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // Every read answered with a lead was charged once; no refused one was.
    const answered = answers.filter((answer) => answer.status === 200);
    const charged = ids.filter((id) => answers.some((answer) => answer.id === id));
    expect(charged.sort()).toEqual(answered.map((answer) => answer.id).sort());
    recordFault({
      fault: "broker stopped and restarted during reads",
      ...readCounts(answers),
      leadViewsCharged: charged.length,
      readsAnswered: answered.length,
    });
  }, 60_000);

  it("gives the reservation back as soon as the client goes away, and never publishes its view", async () => {
    const { key } = await customTenant(reads.stack, 10);
    await broker.start();
    // A broker that has stopped answering: the gateway's connections reach a proxy that holds
    // their bytes until the test lets them through to the real broker.
    const proxy = await holdingProxy(broker.port);
    const stalledBus = new Bus({
      brokers: [`127.0.0.1:${proxy.port}`],
      clientId: "outage-stalled",
      logger: reads.stack.harness.logger,
    });
    const stalled = await buildGateway({
      ...reads.stack.harness,
      bus: stalledBus,
      config: reads.stack.gatewayConfig,
    });
    await stalled.http?.listen({ port: 0, host: "127.0.0.1" });
    try {
      const address = stalled.http?.server.address() as AddressInfo;
      const client = httpRequest({
        host: "127.0.0.1",
        port: address.port,
        path: `/v1/leads/${reads.folios[3]}`,
        headers: { authorization: `Bearer ${key}`, "x-request-id": "outage-read-gone-1" },
      });
      client.on("error", () => {});
      client.end();
      // Reserved and waiting on the broker; the client hangs up well before the 2 s bound.
      await waitUntil(() => proxy.held() > 0);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const during = await reads.stack.request("GET", "/v1/leads/23-0000000000000", {
        key,
        via: gateway,
      });
      expect(leadViewsRemaining(during)).toBe(9);
      client.destroy();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const free = await reads.stack.request("GET", "/v1/leads/23-0000000000000", {
        key,
        via: gateway,
      });
      expect(free.statusCode).toBe(404);
      expect(leadViewsRemaining(free)).toBe(10);
      // The broker answers again: what the gateway had asked before the client left goes
      // through, and its view must still not be published.
      proxy.release();
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await recordedRequestIds()).not.toContain("outage-read-gone-1");
      recordFault({
        fault: "client hangs up while the broker stalls",
        leadViewsCharged: 0,
        readsAnswered: 0,
      });
    } finally {
      await stalled.http?.close();
      await stalledBus.close();
      proxy.close();
    }
  }, 60_000);
});
