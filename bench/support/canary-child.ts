// The machine canary: the same fixed unit of work, over and over, on a live heap of about 50 MB
// with random reads and writes, allocation and hashing, as a service's own work is. Its CPU per
// unit changes only when the machine does (caches, memory bandwidth, a sibling thread), never
// with the code under test. Prints "ready", then every 200 ms the units done and the CPU used,
// both counted from the start.
import { createHmac } from "node:crypto";

const LIVE = 400_000;
const body = JSON.stringify({
  items: Array.from({ length: 20 }, (_, i) => ({ i, text: "x".repeat(20) })),
});
interface Cell {
  i: number;
  text: string;
  next: Cell | undefined;
  counts: number[];
}
const live: Cell[] = Array.from({ length: LIVE }, (_, i) => ({
  i,
  text: `v${i}`,
  next: undefined,
  counts: [i, i + 1, i + 2],
}));
for (let i = 0; i < LIVE; i++) {
  (live[i] as Cell).next = live[(i * 7919) % LIVE];
}
let seed = 1;
let units = 0;

function unit(): void {
  for (let k = 0; k < 50; k++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const cell = live[seed % LIVE] as Cell;
    (cell.counts[0] as number) += cell.next?.i ?? 0;
  }
  const parsed = JSON.parse(body) as { items: Array<{ i: number }> };
  (parsed.items[0] as { i: number }).i = seed;
  live[seed % LIVE] = {
    i: seed % LIVE,
    text: JSON.stringify(parsed.items[0]),
    next: live[(seed >> 3) % LIVE],
    counts: [1, 2, 3],
  };
  createHmac("sha256", "canary").update(body).digest("hex");
  units++;
}

function run(): void {
  const end = performance.now() + 5;
  while (performance.now() < end) {
    unit();
  }
  setImmediate(run);
}

process.stdout.write("ready\n");
setInterval(() => {
  const cpu = process.cpuUsage();
  process.stdout.write(`${units} ${(cpu.user + cpu.system) / 1000}\n`);
}, 200);
run();
