// What the Dockerfile builds, built without Docker: the install stage's COPY sources (less what
// .dockerignore leaves out) go into an empty folder, the stage's own `pnpm install` runs there
// offline from the local store, and the production entry commands apply their
// migrations from that folder with NODE_ENV=production.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { serverUrl } from "@th/db/testing";
import { startBroker } from "@th/dev-broker";
import { GATEWAY_NODE_FLAGS } from "@th/gateway/heap";
import { Kafka, logLevel } from "kafkajs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
// The gateway and the dispatcher: between them they read every production secret.
const services = ["gateway", "webhook-dispatcher"];
const image = mkdtempSync(join(tmpdir(), "th-image-"));
const database = `th_image_${randomBytes(5).toString("hex")}`;

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  await client.query(sql);
  await client.end();
}

/** `COPY <src>... <dest>` and `RUN` lines of the Dockerfile's install stage, in order. */
function installStage(): { copies: string[]; install: string[] } {
  const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
  const stage = dockerfile.split(/^FROM /m).find((part) => / AS install$/m.test(part)) ?? "";
  const copies = [...stage.matchAll(/^COPY (?!--)(.+) \S+$/gm)].flatMap((match) =>
    (match[1] ?? "").split(" "),
  );
  const install = /^RUN (pnpm install .+)$/m.exec(stage)?.[1]?.split(" ") ?? [];
  return { copies, install };
}

// .dockerignore as Docker reads these simple patterns: `**/name`, `*.ext`, a top-level name and
// a folder's path.
function ignored(path: string): boolean {
  const patterns = readFileSync(join(root, ".dockerignore"), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  const segments = path.split("/");
  const name = segments.at(-1) ?? "";
  return patterns.some((pattern) => {
    if (pattern.startsWith("**/")) {
      const rest = pattern.slice(3);
      return rest.startsWith("*.") ? name.endsWith(rest.slice(1)) : segments.includes(rest);
    }
    if (pattern.startsWith("*.")) {
      return segments.length === 1 && name.endsWith(pattern.slice(1));
    }
    if (pattern.includes("/")) {
      return path === pattern || path.startsWith(`${pattern}/`);
    }
    return segments[0] === pattern;
  });
}

function pnpmCommand(): [string, string[]] {
  const local = join(root, ".tools", "pnpm", "node_modules", "pnpm", "bin", "pnpm.cjs");
  return existsSync(local) ? [process.execPath, [local]] : ["pnpm", []];
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

beforeAll(() => admin(`CREATE DATABASE ${database}`));
afterAll(async () => {
  rmSync(image, { recursive: true, force: true });
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
});

describe("the production image layout", () => {
  it("starts the gateway by default, with the Node flags V8 reads only at startup", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const runtime = dockerfile.split(/^FROM /m).find((part) => / AS runtime$/m.test(part)) ?? "";
    const cmd = /^CMD (\[.+\])$/m.exec(runtime)?.[1];
    expect(JSON.parse(cmd ?? "null")).toEqual([
      "node",
      ...GATEWAY_NODE_FLAGS,
      "services/gateway/src/main.ts",
    ]);
  });

  it("installs production dependencies only and runs the services' migrate entries from it", async () => {
    const { copies, install } = installStage();
    expect(copies).toEqual(
      expect.arrayContaining(["pnpm-lock.yaml", "patches", "package.json", "packages", "services"]),
    );
    for (const source of copies) {
      cpSync(join(root, source), join(image, source), {
        recursive: true,
        filter: (path) => !ignored(relative(root, path)),
      });
    }
    expect(install.slice(0, 2)).toEqual(["pnpm", "install"]);
    expect(install).toContain("--offline");
    const [pnpm, pnpmArgs] = pnpmCommand();
    await run(pnpm, [...pnpmArgs, ...install.slice(1)], { cwd: image });

    // Production dependencies only; the Avro schemas ship; no tests ship.
    const installed = readdirSync(join(image, "node_modules", ".pnpm"));
    expect(installed.some((name) => name.startsWith("fastify@"))).toBe(true);
    // The patched kafkajs (patches/), not the registry's copy.
    expect(installed.filter((name) => name.startsWith("kafkajs@"))).toEqual([
      expect.stringContaining("_patch_hash="),
    ]);
    for (const devOnly of ["vitest@", "typescript@", "@biomejs+biome@"]) {
      expect(
        installed.some((name) => name.startsWith(devOnly)),
        devOnly,
      ).toBe(false);
    }
    // No production package reaches the dev broker: it is a test fixture's, never a service's,
    // and neither it nor the test stores ship.
    expect(existsSync(join(image, "packages", "dev-broker"))).toBe(false);
    expect(existsSync(join(image, "packages", "test-stores"))).toBe(false);
    for (const dir of ["packages", "services"]) {
      for (const name of readdirSync(join(image, dir))) {
        expect(
          existsSync(join(image, dir, name, "node_modules", "@th", "dev-broker")),
          `${dir}/${name}`,
        ).toBe(false);
      }
    }
    expect(filesUnder(join(image, "packages", "contracts", "schemas")).length).toBeGreaterThan(0);
    const shipped = [
      ...filesUnder(join(image, "packages")),
      ...filesUnder(join(image, "services")),
    ];
    expect(
      shipped.filter((path) => !path.includes("node_modules") && path.endsWith(".test.ts")),
    ).toEqual([]);

    const url = new URL(serverUrl());
    url.pathname = `/${database}`;
    const env = {
      PATH: process.env.PATH,
      NODE_ENV: "production",
      DATABASE_URL: url.toString(),
      KEY_PEPPER: randomBytes(32).toString("hex"),
      INTERNAL_SIGNING_SECRET: randomBytes(32).toString("hex"),
      INTERNAL_CALLER_KEYS: `gateway:${randomBytes(32).toString("hex")}`,
      SESSION_SECRET: randomBytes(32).toString("hex"),
      SECRET_KEYS: `k1:${randomBytes(32).toString("hex")}`,
    };
    await Promise.all(
      services.map((service) =>
        run(process.execPath, [`services/${service}/src/main.ts`, "migrate"], { cwd: image, env }),
      ),
    );
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    const { rows } = await client.query<{ schema_name: string }>(
      "SELECT schema_name FROM information_schema.schemata WHERE schema_name = ANY($1)",
      [["gateway", "dispatcher"]],
    );
    await client.end();
    // The gateway owns no schema: its migrate command creates nothing.
    expect(rows.map((row) => row.schema_name)).toEqual(["dispatcher"]);

    // The topics hook's command, from the same install, against a broker that has no topics.
    const broker = await startBroker({ port: 0 });
    try {
      await run(process.execPath, ["packages/topics/src/cli.ts", "--apply"], {
        cwd: image,
        env: {
          PATH: process.env.PATH,
          NODE_ENV: "production",
          KAFKA_BROKERS: broker.brokers.join(","),
          TOPICS_REPLICATION_FACTOR: "1",
          TOPICS_MIN_INSYNC_REPLICAS: "1",
        },
      });
      const admin = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const topics = await admin.listTopics();
      await admin.disconnect();
      expect(topics).toEqual(expect.arrayContaining(["leadview.recorded", "match.found.parked"]));
    } finally {
      await broker.stop();
    }
  }, 120_000);
});
