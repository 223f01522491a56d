// Closed-loop paid reads from a process of its own: `connections` keep-alive connections spread
// over the gateway URLs, each sending GET /v1/leads/{folio} (or POST /v1/leads/batch) as soon as
// its previous answer arrives, with a tenant's key and a folio picked at random, so new views and
// repeat views of the UTC day both occur.
// Run: node bench/support/read-load.ts <file holding the plan as JSON: {urls, keys, folios,
// seconds, connections, batch}>
// Prints one JSON line: {completed, seconds, non2xx, statuses, samples, p50, p99, cpuMs}.
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";

interface Plan {
  urls: string[];
  keys: string[];
  folios: string[];
  seconds: number;
  connections: number;
  /** Folios per request: 0 for single reads, else POST /v1/leads/batch with this many. */
  batch: number;
}

const plan = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8")) as Plan;
const agent = new Agent({ keepAlive: true, maxSockets: plan.connections });
const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T;
const latencies: number[] = [];
const statuses = new Map<number, number>();
/** One answer's body per error status, to say what went wrong. */
const samples = new Map<number, string>();
let completed = 0;
let measuring = false;

function once(base: string): Promise<void> {
  const started = performance.now();
  const batch = plan.batch > 0;
  const body = batch
    ? JSON.stringify({ folios: Array.from({ length: plan.batch }, () => pick(plan.folios)) })
    : undefined;
  const url = batch ? `${base}/v1/leads/batch` : `${base}/v1/leads/${pick(plan.folios)}`;
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: batch ? "POST" : "GET",
        agent,
        headers: {
          authorization: `Bearer ${pick(plan.keys)}`,
          ...(body ? { "content-type": "application/json" } : {}),
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        if (status >= 300 && !samples.has(status)) {
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
        } else {
          res.resume();
        }
        res.on("end", () => {
          if (chunks.length > 0) {
            samples.set(status, Buffer.concat(chunks).toString().slice(0, 300));
          }
          if (measuring) {
            completed++;
            latencies.push(performance.now() - started);
            statuses.set(res.statusCode ?? 0, (statuses.get(res.statusCode ?? 0) ?? 0) + 1);
          }
          resolve();
        });
      },
    );
    req.on("error", () => resolve());
    req.end(body);
  });
}

async function loop(base: string, until: () => boolean): Promise<void> {
  while (!until()) {
    await once(base);
  }
}

const warmupEnds = Date.now() + 2_000;
const ends = warmupEnds + plan.seconds * 1000;
let cpuAtStart = process.cpuUsage();
setTimeout(() => {
  measuring = true;
  cpuAtStart = process.cpuUsage();
}, 2_000);
await Promise.all(
  Array.from({ length: plan.connections }, (_, i) =>
    loop(plan.urls[i % plan.urls.length] as string, () => Date.now() >= ends),
  ),
);
const cpu = process.cpuUsage(cpuAtStart);
latencies.sort((a, b) => a - b);
const at = (p: number) =>
  latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
process.stdout.write(
  `${JSON.stringify({
    completed,
    seconds: plan.seconds,
    non2xx: [...statuses]
      .filter(([status]) => status < 200 || status > 299)
      .reduce((s, [, n]) => s + n, 0),
    statuses: Object.fromEntries(statuses),
    samples: Object.fromEntries(samples),
    p50: at(0.5),
    p99: at(0.99),
    cpuMs: (cpu.user + cpu.system) / 1000,
  })}\n`,
);
agent.destroy();
