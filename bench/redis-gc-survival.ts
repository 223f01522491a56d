// How much of what a process allocates survives its young-generation collections when requests
// wait for Redis the way the edge's authorization waits: the requests of each turn of the event
// loop are collected, one Redis call is sent for them, and its reply completes every one. The
// same load runs twice, each in a process of its own, through ioredis and through a plain socket
// speaking the same command; the process runs under --trace-gc-nvp and the figures come from V8's
// own line per scavenge (after a warm-up). What survives a scavenge is copied, and what survives
// two is promoted to the old generation, so the surviving share sets both how long each young
// collection pauses the process and how soon a mark-compact follows. Unpatched, ioredis promoted
// about 7.9 % of what this load allocates (the socket 0.01 %): it allocated each command's reject
// function in the old generation (see patches/ioredis@6.0.0.patch); with the patch the two should
// be close.
// Run: node bench/redis-gc-survival.ts [requests per second] [seconds]
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { Redis } from "ioredis";

const CLIENTS = ["ioredis", "socket"] as const;
type Client = (typeof CLIENTS)[number];
const WARMUP_MS = 3_000;
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const KEY = "th:bench:gc-survival:absent";

const childClient = process.argv[2] === "--child" ? (process.argv[3] as Client) : undefined;
const rate = Number((childClient ? process.argv[4] : process.argv[2]) ?? 14_000);
const seconds = Number((childClient ? process.argv[5] : process.argv[3]) ?? 8);

/** A request's own objects, as an edge request would hold them while it waits. */
interface PendingRequest {
  id: number;
  headers: Record<string, string>;
  done: () => void;
}

/** Sends one GET per batch and calls `onReply` once per reply, in order. */
async function openClient(client: Client, onReply: () => void): Promise<(key: string) => void> {
  const url = new URL(REDIS_URL);
  if (client === "ioredis") {
    const redis = new Redis(REDIS_URL);
    await redis.ping();
    process.once("exit", () => redis.disconnect());
    return (key) => {
      redis.get(key, onReply);
    };
  }
  const socket = connect(Number(url.port || 6379), url.hostname);
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  // A GET of an absent key answers "$-1\r\n": one line per reply.
  socket.on("data", (data: Buffer) => {
    for (let index = 0; index < data.length; index++) {
      if (data[index] === 10) {
        onReply();
      }
    }
  });
  process.once("exit", () => socket.destroy());
  return (key) => {
    socket.write(`*2\r\n$3\r\nGET\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`);
  };
}

async function runChild(client: Client): Promise<void> {
  const inFlight: PendingRequest[][] = [];
  let completed = 0;
  const send = await openClient(client, () => {
    const batch = inFlight.shift() ?? [];
    for (const request of batch) {
      request.done();
    }
  });
  const startedAt = performance.now();
  let created = 0;
  await new Promise<void>((finish) => {
    const tick = () => {
      const elapsed = performance.now() - startedAt;
      if (elapsed > WARMUP_MS + seconds * 1000) {
        finish();
        return;
      }
      const batch: PendingRequest[] = [];
      for (const due = Math.floor((elapsed * rate) / 1000); created < due; created++) {
        const id = created;
        batch.push({
          id,
          headers: { authorization: `Bearer ${id}`, "x-request-id": `req-${id}` },
          done: () => {
            completed++;
          },
        });
      }
      if (batch.length > 0) {
        inFlight.push(batch);
        send(KEY);
      }
      setTimeout(tick, 1);
    };
    tick();
  });
  process.stdout.write(`completed ${completed} of ${created}\n`);
  process.exit(0);
}

interface Survival {
  scavenges: number;
  allocatedKb: number;
  survivedPercent: number;
  promotedPercent: number;
  pauseMs: number;
  completed: string;
}

/** Runs one client's load in a child process and reads V8's scavenge lines after the warm-up. */
function measure(client: Client): Promise<Survival> {
  const child = spawn(
    process.execPath,
    ["--trace-gc-nvp", import.meta.filename, "--child", client, String(rate), String(seconds)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    output += text;
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) {
        reject(new Error(`the ${client} run exited with ${code}`));
        return;
      }
      const field = (line: string, name: string) =>
        Number(new RegExp(`\\b${name}=([\\d.]+)`).exec(line)?.[1] ?? Number.NaN);
      let scavenges = 0;
      let allocated = 0;
      let survived = 0;
      let promoted = 0;
      let pause = 0;
      for (const line of output.split("\n")) {
        const at = Number(/\s(\d+) ms: pause=/.exec(line)?.[1] ?? Number.NaN);
        if (!line.includes(" gc=s ") || !(at > WARMUP_MS)) {
          continue;
        }
        scavenges++;
        allocated += field(line, "allocated");
        survived += field(line, "new_space_survived");
        promoted += field(line, "promoted");
        pause += field(line, "pause");
      }
      resolve({
        scavenges,
        allocatedKb: scavenges > 0 ? allocated / scavenges / 1000 : 0,
        survivedPercent: allocated > 0 ? (survived / allocated) * 100 : 0,
        promotedPercent: allocated > 0 ? (promoted / allocated) * 100 : 0,
        pauseMs: scavenges > 0 ? pause / scavenges : 0,
        completed: /completed (\d+ of \d+)/.exec(output)?.[1] ?? "unknown",
      });
    });
  });
}

if (childClient) {
  await runChild(childClient);
} else {
  console.info(
    `${rate} requests/s for ${seconds} s, one Redis call per turn of the event loop, after a ${WARMUP_MS / 1000} s warm-up`,
  );
  const results = new Map<Client, Survival>();
  for (const client of CLIENTS) {
    const result = await measure(client);
    results.set(client, result);
    console.info(
      `${client.padEnd(8)} scavenges ${String(result.scavenges).padStart(3)}  allocated ${result.allocatedKb.toFixed(0).padStart(6)} KB each  survived ${result.survivedPercent.toFixed(2)} %  promoted ${result.promotedPercent.toFixed(2)} %  pause ${result.pauseMs.toFixed(2)} ms  requests completed ${result.completed}`,
    );
  }
  const ioredis = results.get("ioredis");
  const socket = results.get("socket");
  if (ioredis && socket) {
    console.info(
      `average scavenge pause, ioredis / plain socket: ${(ioredis.pauseMs / socket.pauseMs).toFixed(2)}x`,
    );
  }
}
