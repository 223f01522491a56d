import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chooseTestStores, RESOLVED_VAR, resolvedMode } from "./choice.ts";
import { describeEndpoint, dockerAnswers, dockerEndpoint } from "./docker.ts";

const where = "unix:///var/run/docker.sock";

describe("which stores the integration suites use", () => {
  it("uses containers when a Docker engine answers and nothing is asked", () => {
    expect(chooseTestStores(undefined, { reachable: true, where })).toEqual({
      mode: "containers",
      reason: `a Docker engine answers at ${where}`,
    });
  });

  it("uses this machine's stores and the dev broker when no engine answers", () => {
    expect(chooseTestStores(undefined, { reachable: false, where })).toEqual({
      mode: "local",
      reason: `no Docker engine answers at ${where}`,
    });
    expect(chooseTestStores("", { reachable: false, where }).mode).toBe("local");
  });

  it("follows TEST_STORES either way, whatever the engine", () => {
    expect(chooseTestStores("containers", { reachable: false, where })).toEqual({
      mode: "containers",
      reason: "TEST_STORES=containers",
    });
    expect(chooseTestStores(" Local ", { reachable: true, where })).toEqual({
      mode: "local",
      reason: "TEST_STORES=local",
    });
  });

  it("refuses any other TEST_STORES value", () => {
    expect(() => chooseTestStores("docker", { reachable: true, where })).toThrow(
      'TEST_STORES must be "containers" or "local", not "docker"',
    );
  });

  it("hands the decision to the test files, local when there was none", () => {
    expect(resolvedMode({ [RESOLVED_VAR]: "containers" })).toBe("containers");
    expect(resolvedMode({ [RESOLVED_VAR]: "local" })).toBe("local");
    expect(resolvedMode({})).toBe("local");
  });
});

describe("finding the Docker engine", () => {
  const dir = mkdtempSync(join(tmpdir(), "docker-ping-"));
  const servers: Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
    rmSync(dir, { recursive: true, force: true });
  });

  /** An HTTP server on a unix socket answering the engine API's ping as `answer`. */
  async function engine(name: string, status: number, answer: string): Promise<string> {
    const socketPath = join(dir, name);
    const server = createServer((req, res) => {
      res.writeHead(req.url === "/_ping" ? status : 404).end(answer);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    return socketPath;
  }

  it("reads DOCKER_HOST, else the default socket", () => {
    expect(dockerEndpoint(undefined)).toEqual({ socketPath: "/var/run/docker.sock" });
    expect(dockerEndpoint("unix:///run/user/1000/docker.sock")).toEqual({
      socketPath: "/run/user/1000/docker.sock",
    });
    expect(dockerEndpoint("tcp://10.0.0.5:2376")).toEqual({ host: "10.0.0.5", port: 2376 });
    expect(describeEndpoint(dockerEndpoint("tcp://docker:2375"))).toBe("tcp://docker:2375");
  });

  it("counts an engine that answers its ping, and nothing else", async () => {
    expect(await dockerAnswers({ socketPath: await engine("ok.sock", 200, "OK") })).toBe(true);
    expect(await dockerAnswers({ socketPath: await engine("down.sock", 500, "down") })).toBe(false);
    expect(await dockerAnswers({ socketPath: join(dir, "absent.sock") })).toBe(false);
  });
});
