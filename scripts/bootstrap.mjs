#!/usr/bin/env node
// Entry point of `npm start` and `npm test`. Runs on whatever Node the user has (npm's own),
// so it uses only built-in modules: it fetches the pinned Node 24 and pnpm from the npm registry
// into .tools/, installs dependencies, makes sure Postgres and Redis answer, then hands over to
// the real command running on Node 24.
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureStores } from "./stores.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const toolsDir = join(root, ".tools");
const pinnedNode = readFileSync(join(root, ".node-version"), "utf8").trim();
const pinnedPnpm = JSON.parse(
  readFileSync(join(root, "package.json"), "utf8"),
).packageManager.split("@")[1];

const commands = {
  start: ["scripts/start.ts"],
  test: ["scripts/test.ts"],
  chaos: ["scripts/chaos.ts"],
  migrate: ["scripts/migrate.ts"],
  broker: ["packages/dev-broker/src/cli.ts"],
  "ledger-rebuild": ["services/quota-ledger/src/main.ts", "rebuild"],
  ingest: ["services/parcels/src/ingest/cli.ts"],
  generate: ["services/parcels/src/testing/generate-nal.ts"],
  topics: ["packages/topics/src/cli.ts"],
};
/** Commands that touch neither Postgres nor Redis, so nothing is started for them. */
const storeless = new Set(["broker", "generate", "topics"]);

function log(message) {
  process.stderr.write(`\u001b[2m[bootstrap]\u001b[0m ${message}\n`);
}

function fail(message) {
  process.stderr.write(`[bootstrap] error: ${message}\n`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: "inherit", cwd: root, ...options });
  if (result.error) {
    fail(`${command} could not run: ${result.error.message}`);
  }
  if (result.status !== 0) {
    fail(`${command} ${args.join(" ")} exited with ${result.status}`);
  }
}

function versionAtLeast(version, minimum) {
  const [a, b, c] = version.replace(/^v/, "").split(".").map(Number);
  const [x, y, z] = minimum.split(".").map(Number);
  return a !== x ? a > x : b !== y ? b > y : c >= z;
}

/** The Node binary the project runs on: this one if recent enough, else the pinned Node 24. */
function ensureNode() {
  if (versionAtLeast(process.version, "22.12.0")) {
    return process.execPath;
  }
  const prefix = join(toolsDir, "node");
  const binary = join(prefix, "node_modules", "node", "bin", "node");
  const installed = existsSync(binary)
    ? spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout.trim()
    : "";
  if (installed !== `v${pinnedNode}`) {
    log(`Node ${process.version} is older than 22.12; fetching node@${pinnedNode} into .tools/`);
    npmInstallInto(prefix, `node@${pinnedNode}`);
  }
  return binary;
}

/**
 * Installs one package from the npm registry into its own prefix under .tools/: outside the
 * workspace, so npm neither reads nor writes the project's manifest or pnpm's lockfile.
 */
function npmInstallInto(prefix, spec) {
  mkdirSync(prefix, { recursive: true });
  run("npm", [
    "install",
    "--prefix",
    prefix,
    "--no-save",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    spec,
  ]);
}

function ensurePnpm() {
  const prefix = join(toolsDir, "pnpm");
  const entry = join(prefix, "node_modules", "pnpm", "bin", "pnpm.cjs");
  const manifest = join(prefix, "node_modules", "pnpm", "package.json");
  const installed = existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")).version : "";
  if (installed !== pinnedPnpm) {
    log(`fetching pnpm@${pinnedPnpm} into .tools/`);
    npmInstallInto(prefix, `pnpm@${pinnedPnpm}`);
  }
  return entry;
}

function manifestFingerprint() {
  const hash = createHash("sha256");
  const files = ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml"];
  for (const group of ["packages", "services"]) {
    const dir = join(root, group);
    if (existsSync(dir)) {
      for (const name of readdirSync(dir).sort()) {
        files.push(join(group, name, "package.json"));
      }
    }
  }
  files.push("test/package.json", "bench/package.json");
  for (const file of files) {
    const path = join(root, file);
    hash.update(file);
    hash.update(existsSync(path) ? readFileSync(path) : "");
  }
  return hash.digest("hex");
}

/** Installs dependencies only when a manifest or the lockfile changed, so a second run is fast. */
function ensureDependencies(node, pnpm) {
  const stamp = join(root, "node_modules", ".bootstrap-stamp");
  const fingerprint = manifestFingerprint();
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === fingerprint) {
    return;
  }
  log("installing dependencies with pnpm");
  const frozen = existsSync(join(root, "pnpm-lock.yaml")) ? ["--frozen-lockfile"] : [];
  run(node, [pnpm, "install", ...frozen, "--reporter=append-only"], { env: childEnv(node) });
  writeFileSync(stamp, manifestFingerprint());
}

function childEnv(node) {
  const path = [
    dirname(node),
    join(toolsDir, "pnpm", "node_modules", ".bin"),
    join(root, "node_modules", ".bin"),
    process.env.PATH,
  ].join(":");
  return { ...process.env, PATH: path, TURBO_TELEMETRY_DISABLED: "1", DO_NOT_TRACK: "1" };
}

const command = process.argv[2];
if (!command || !commands[command]) {
  fail(`usage: bootstrap.mjs <${Object.keys(commands).join("|")}> [args...]`);
}
const node = ensureNode();
const pnpm = ensurePnpm();
ensureDependencies(node, pnpm);
if (!storeless.has(command)) {
  const stores = await ensureStores({ env: process.env, log, fail });
  process.env.DATABASE_URL = stores.databaseUrl;
  process.env.REDIS_URL = stores.redisUrl;
}
const child = spawn(node, [...commands[command], ...process.argv.slice(3)], {
  stdio: "inherit",
  cwd: root,
  env: childEnv(node),
});
// Ctrl-C signals the terminal's whole foreground group, the command included: the command
// decides how to stop (npm start stops its services, then the broker) and this process waits
// for it rather than returning the prompt first. A SIGTERM sent to this process alone is passed on.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => child.kill("SIGTERM"));
child.on("exit", (code, signal) => {
  // Killed by a signal: the shell's convention, 128 + its number.
  process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
});
