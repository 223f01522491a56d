// Makes sure Postgres and Redis answer before anything else runs. Built-in modules only: it runs
// before dependencies are installed. Order of preference: what DATABASE_URL / REDIS_URL name,
// else localhost; a local server that is down is started; one that is missing is installed when
// we are root on Debian. Anything else ends in one clear line.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_DATABASE_URL = "postgres://postgres:postgres@127.0.0.1:5432/postgres";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/** Resolves true when something accepts a TCP connection on host:port within the timeout. */
export function answers(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = connect({ host: host.replace(/^\[|\]$/g, ""), port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

export function endpointOf(url, defaultPort) {
  const parsed = new URL(url);
  return { host: parsed.hostname || "127.0.0.1", port: Number(parsed.port || defaultPort) };
}

async function waitFor(host, port, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await answers(host, port, 250)) {
      return true;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

function has(command) {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

function quiet(command, args) {
  return spawnSync(command, args, { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
}

function canInstall() {
  return process.getuid?.() === 0 && existsSync("/etc/debian_version") && has("apt-get");
}

function aptInstall(packages, log) {
  log(`installing ${packages.join(", ")} from Debian packages`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  spawnSync("apt-get", ["update", "-qq"], { stdio: "ignore", env });
  const result = spawnSync("apt-get", ["install", "-y", "-qq", ...packages], {
    stdio: "ignore",
    env,
  });
  return result.status === 0;
}

function postgresVersions() {
  return existsSync("/etc/postgresql") ? readdirSync("/etc/postgresql").sort() : [];
}

function startPostgres(port) {
  if (!has("pg_ctlcluster")) {
    return false;
  }
  let version = postgresVersions().at(-1);
  if (!version) {
    const binaries = existsSync("/usr/lib/postgresql") ? readdirSync("/usr/lib/postgresql") : [];
    version = binaries.sort().at(-1);
    if (!version) {
      return false;
    }
    quiet("pg_createcluster", [version, "main", "--port", String(port)]);
  }
  quiet("pg_ctlcluster", ["--skip-systemctl-redirect", version, "main", "start"]);
  return true;
}

/** A freshly installed Debian Postgres asks for a password over TCP; give it the default one. */
function setDefaultPostgresPassword() {
  quiet("runuser", [
    "-u",
    "postgres",
    "--",
    "psql",
    "-qc",
    "ALTER USER postgres PASSWORD 'postgres'",
  ]);
}

function startRedis(port) {
  if (!has("redis-server")) {
    return false;
  }
  const dir = join(root, ".data", "redis");
  mkdirSync(dir, { recursive: true });
  quiet("redis-server", [
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "--port",
    String(port),
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir,
    "--logfile",
    join(dir, "redis.log"),
  ]);
  return true;
}

async function ensureOne(
  { name, variable, url, defaultPort, start, debianPackages, afterInstall },
  deps,
) {
  const { host, port } = endpointOf(url, defaultPort);
  if (await answers(host, port)) {
    return;
  }
  if (!LOCAL_HOSTS.has(host)) {
    deps.fail(`${name} at ${host}:${port} (from ${variable}) does not answer`);
  }
  deps.log(`${name} is not answering on ${host}:${port}; starting it`);
  if (start(port) && (await waitFor(host, port, 30))) {
    return;
  }
  if (!canInstall()) {
    deps.fail(
      `${name} is not running on ${host}:${port} and cannot be started here; start it or set ${variable}`,
    );
  }
  if (!aptInstall(debianPackages, deps.log)) {
    deps.fail(
      `apt-get install ${debianPackages.join(" ")} failed; install ${name} or set ${variable}`,
    );
  }
  start(port);
  if (!(await waitFor(host, port, 60))) {
    deps.fail(`${name} was installed but does not answer on ${host}:${port}`);
  }
  afterInstall?.();
}

/** Returns the URLs the project should use once both stores answer. */
export async function ensureStores({ env, log, fail }) {
  const databaseUrl = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const redisUrl = env.REDIS_URL || DEFAULT_REDIS_URL;
  const deps = { log, fail };
  // One after the other: two apt-get runs at once would fight over the dpkg lock.
  await ensureOne(
    {
      name: "Postgres",
      variable: "DATABASE_URL",
      url: databaseUrl,
      defaultPort: 5432,
      start: startPostgres,
      debianPackages: ["postgresql"],
      afterInstall: setDefaultPostgresPassword,
    },
    deps,
  );
  await ensureOne(
    {
      name: "Redis",
      variable: "REDIS_URL",
      url: redisUrl,
      defaultPort: 6379,
      start: startRedis,
      debianPackages: ["redis-server"],
    },
    deps,
  );
  return { databaseUrl, redisUrl };
}
