// A Postgres cluster and a Redis server of a test's own, on free ports in a temporary directory,
// so a test can restart or stop them without disturbing any other suite on the machine's shared
// stores. Postgres comes from the machine's server packages (/usr/lib/postgresql/<version>/bin);
// as root the cluster runs as the postgres user, as Postgres refuses to run as root.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function postgresBin(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(`no Postgres server binaries under ${root}`);
  }
  return join(root, versions[0] as string, "bin");
}

const asRoot = process.getuid?.() === 0;

async function asPostgres(file: string, args: string[]) {
  return asRoot ? run("runuser", ["-u", "postgres", "--", file, ...args]) : run(file, args);
}

export interface PrivatePostgres {
  /** Server URL (the `postgres` database); tests create their own databases on it. */
  url: string;
  port: number;
  /** Fast shutdown: connections are terminated ("terminating connection due to administrator command"). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops, stays down `downMs`, starts again. */
  restart(downMs?: number): Promise<void>;
  destroy(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), "th-private-pg-"));
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const uid = Number(stdout.trim());
    chownSync(dir, uid, uid);
  }
  const data = join(dir, "data");
  await asPostgres(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const pgCtl = (...args: string[]) =>
    asPostgres(join(bin, "pg_ctl"), ["-D", data, "-l", join(dir, "log"), "-o", options, ...args]);
  let running = false;
  const start = async () => {
    await pgCtl("-w", "start");
    running = true;
  };
  const stop = async () => {
    await pgCtl("-w", "-m", "fast", "stop");
    running = false;
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    async restart(downMs = 0) {
      await stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
    async destroy() {
      if (running) {
        await pgCtl("-w", "-m", "immediate", "stop").catch(() => {});
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** A redis-server without persistence on a free port; `stop` kills it, `start` runs a new one. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      "redis-server",
      ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    const deadline = Date.now() + 10_000;
    for (;;) {
      const up = await new Promise<boolean>((resolve) => {
        const socket = connect({ host: "127.0.0.1", port });
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(false));
      });
      if (up) {
        return;
      }
      if (Date.now() > deadline) {
        throw new Error("private redis-server did not start");
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stop = async () => {
    const current = child;
    child = undefined;
    if (current && current.exitCode === null) {
      const exited = new Promise((resolve) => current.once("exit", resolve));
      current.kill("SIGKILL");
      await exited;
    }
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, start, stop, destroy: stop };
}
