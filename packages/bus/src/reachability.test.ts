import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { checkKafka } from "./reachability.ts";
import { busFixture } from "./testing/fixture.ts";

const kit = busFixture("reachability-test");

async function closedAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `127.0.0.1:${port}`;
}

describe("broker reachability", () => {
  it("is fine when one of the brokers answers, even if another does not", async () => {
    const brokers = [await closedAddress(), ...kit.brokers];
    expect(await checkKafka({ brokers }, { clientId: "test" })).toBeNull();
  });

  it("says which addresses were tried and how to start a broker when none answers", async () => {
    const closed = await closedAddress();
    const problem = await checkKafka({ brokers: [closed] }, { clientId: "test" });
    expect(problem?.setting).toBe("KAFKA_BROKERS");
    expect(problem?.retriable).toBe(true);
    expect(problem?.line).toContain(`no Kafka broker answers at ${closed} (`);
    expect(problem?.line).toContain("npm run broker");
  });
});
