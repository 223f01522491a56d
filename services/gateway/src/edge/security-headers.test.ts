// Security headers on every answer of the gateway, over real HTTP: success, refusals, unknown
// paths, answers written before any route ran (bytes that are not HTTP, an oversized header
// block), the dashboard's page and files, the API's docs page, and MCP, which writes its answer
// itself. Real Redis; the keys service is unreachable.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateApiKey, hashApiKey } from "@th/api-keys";
import { pepperOf } from "@th/config";
import { tenantChanged } from "@th/contracts/samples";
import { HSTS } from "@th/service-kit";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { DOCS_CONTENT_POLICY } from "../routes/docs.ts";

type Gateway = Awaited<ReturnType<typeof buildApp>>;

let harness: TestHarness<Config>;
let gateway: Gateway;
let plain: Gateway;
let origin: string;
let plainOrigin: string;
let dashboardDir: string;

async function listen(app: Gateway): Promise<string> {
  const http = app.http as NonNullable<Gateway["http"]>;
  await http.listen({ port: 0, host: "127.0.0.1" });
  return `http://127.0.0.1:${(http.server.address() as { port: number }).port}`;
}

beforeAll(async () => {
  // A dashboard build of its own: a page and one hashed asset.
  dashboardDir = mkdtempSync(join(tmpdir(), "th-dashboard-"));
  mkdirSync(join(dashboardDir, "assets"));
  writeFileSync(join(dashboardDir, "index.html"), "<!doctype html><title>dashboard</title>");
  writeFileSync(join(dashboardDir, "assets", "index-abc123.js"), "console.log(1);");
  // Port 1 refuses connections: a key the cache does not know cannot be looked up.
  const base = { ...readConfig({}), KEYS_URL: "http://127.0.0.1:1", DASHBOARD_DIR: dashboardDir };
  harness = await createTestHarness({ config: { ...base, HSTS: true }, migrations: [] });
  gateway = await buildApp(harness);
  origin = await listen(gateway);
  // The development default: no HSTS.
  plain = await buildApp({ ...harness, config: base });
  plainOrigin = await listen(plain);
});
afterAll(async () => {
  await gateway.http?.close();
  await plain.http?.close();
  await harness.close();
  rmSync(dashboardDir, { recursive: true, force: true });
});

/** What every answer must carry, whatever answered it. */
function expectSecured(headers: Headers | Record<string, string>, where: string) {
  const get = (name: string) =>
    headers instanceof Headers ? headers.get(name) : (headers[name] ?? null);
  expect(get("x-content-type-options"), where).toBe("nosniff");
  expect(get("x-frame-options"), where).toBe("DENY");
  expect(get("content-security-policy"), where).toMatch(/frame-ancestors 'none'/);
  expect(get("strict-transport-security"), where).toBe(HSTS);
}

async function tenantKey(tier: "operator" | "starter"): Promise<string> {
  const tenantId = `ten_${randomBytes(4).toString("hex")}`;
  await gateway.store.putTenant({
    ...tenantChanged,
    tenant_id: tenantId,
    tier,
    revision: 1,
    status: "active",
  });
  const key = generateApiKey();
  await gateway.store.putKey(hashApiKey(key, pepperOf(harness.config)), {
    tenantId,
    memberId: "mem_1",
    keyId: "key_1",
    revoked: false,
  });
  return key;
}

/** Writes raw bytes and reads the server's answer: its status line and headers. */
function rawAnswer(bytes: string): Promise<{ status: number; headers: Record<string, string> }> {
  const port = Number(new URL(origin).port);
  return new Promise((resolve, reject) => {
    let text = "";
    const socket = connect(port, "127.0.0.1", () => socket.end(bytes));
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = ""] = text.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers = Object.fromEntries(
        lines.map((line) => {
          const colon = line.indexOf(":");
          return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
        }),
      );
      resolve({ status: Number(statusLine.split(" ")[1]), headers });
    });
  });
}

describe("Security headers on every answer of the gateway", () => {
  it("are on a success, a 401, a 403, a 404 and a 405", async () => {
    const starter = await tenantKey("starter");
    const operator = await tenantKey("operator");
    const answers: [string, Response, number][] = [
      ["health", await fetch(`${origin}/v1/health`), 200],
      ["no key", await fetch(`${origin}/v1/me`), 401],
      [
        "tier",
        await fetch(`${origin}/mcp`, {
          method: "POST",
          headers: { authorization: `Bearer ${starter}`, "content-type": "application/json" },
          body: "{}",
        }),
        403,
      ],
      ["unknown path", await fetch(`${origin}/v2/leads`), 404],
      ["favicon", await fetch(`${origin}/favicon.ico`), 404],
      [
        "method",
        await fetch(`${origin}/v1/me`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${operator}` },
        }),
        405,
      ],
    ];
    for (const [where, response, status] of answers) {
      expect(response.status, where).toBe(status);
      expectSecured(response.headers, where);
      // An API answer sets no policy of its own: nothing may load or run from it.
      expect(response.headers.get("content-security-policy"), where).toBe(
        "default-src 'none'; frame-ancestors 'none'",
      );
    }
  });

  it("are on answers written before any route ran: bytes that are not HTTP and a header block over the limit", async () => {
    const garbage = await rawAnswer("NOT HTTP AT ALL\r\n\r\n");
    expect(garbage.status).toBe(400);
    expectSecured(garbage.headers, "not HTTP");
    const oversized = await rawAnswer(
      `GET /v1/health HTTP/1.1\r\nHost: a\r\nX-Padding: ${"a".repeat(17_000)}\r\n\r\n`,
    );
    expect(oversized.status).toBe(431);
    expectSecured(oversized.headers, "431");
  });

  it("are on MCP's answers, which the route writes itself", async () => {
    const key = await tenantKey("operator");
    const response = await fetch(`${origin}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(response.status).toBe(200);
    expectSecured(response.headers, "mcp");
  });

  it("frame the docs page nowhere, and let it apply only its own inline style", async () => {
    const response = await fetch(`${origin}/v1/docs`);
    expect(response.status).toBe(200);
    expectSecured(response.headers, "docs");
    const policy = response.headers.get("content-security-policy") ?? "";
    expect(policy).toBe(DOCS_CONTENT_POLICY);
    expect(policy).toMatch(/default-src 'none'/);
    // The hash in the policy is the hash of the style the page holds, so the page is styled.
    const page = await response.text();
    const style = /<style>([\s\S]*?)<\/style>/.exec(page)?.[1] ?? "";
    expect(style.length).toBeGreaterThan(0);
    expect(policy).toContain(`'sha256-${createHash("sha256").update(style).digest("base64")}'`);
    expect(page).not.toMatch(/<script/i);
  });

  it("are on the dashboard's page, with its own policy, and on its files", async () => {
    const page = await fetch(`${origin}/overview`);
    expect(page.status).toBe(200);
    expectSecured(page.headers, "dashboard page");
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    const asset = await fetch(`${origin}/assets/index-abc123.js`);
    expect(asset.status).toBe(200);
    expectSecured(asset.headers, "dashboard asset");
  });

  it("carry HSTS only where the public origin is set to be HTTPS (unset: production only)", async () => {
    const response = await fetch(`${plainOrigin}/v1/health`);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("strict-transport-security")).toBeNull();
    expect(readConfig({}).HSTS).toBeUndefined();
    expect(readConfig({ HSTS: "true" }).HSTS).toBe(true);
    expect(() => readConfig({ HSTS: "yes please" })).toThrow(/HSTS/);
  });
});
