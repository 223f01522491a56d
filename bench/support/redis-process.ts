// A Redis server of the bench's own, so that the Redis CPU a bench reports is its own: the
// machine's Redis serves every other test run on it too. Nothing is persisted.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { sleep } from "./processes.ts";

export interface RedisProcess {
  url: string;
  pid: number | undefined;
  stop(): Promise<void>;
}

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Starts `redis-server` on a free loopback port; resolves once it answers PING. */
export async function startRedisProcess(): Promise<RedisProcess> {
  const port = await freePort();
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  probe.on("error", () => {});
  for (let attempt = 0; ; attempt++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (error) {
      if (attempt > 50 || child.exitCode !== null) {
        child.kill();
        throw new Error(`redis-server did not start on ${port}: ${(error as Error).message}`);
      }
      probe.disconnect();
      await sleep(100);
    }
  }
  probe.disconnect();
  return {
    url,
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) {
          resolve();
          return;
        }
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
