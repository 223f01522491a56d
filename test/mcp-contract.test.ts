// MCP's contract as clients meet it, through the real gateway over HTTP with the official SDK
// client: the reference client configurations of docs/mcp.md keep the key in the environment,
// and search_leads takes the same search as GET /v1/leads (the same names, bounds and signals).
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LEAD_SEARCH_BOUNDS } from "@th/api-schemas";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let folios: string[];
let mcpUrl: URL;

beforeAll(async () => {
  stack = await startEdgeStack();
  folios = await stack.ingestSample();
  const http = stack.gateway.http;
  if (!http) {
    throw new Error("no gateway");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  mcpUrl = new URL(`http://127.0.0.1:${(http.server.address() as AddressInfo).port}/mcp`);
});
afterAll(() => stack.close());

async function connect(headers: Record<string, string>) {
  const client = new Client({ name: "mcp-contract-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers } }));
  return client;
}

/** The JSON code blocks of docs/mcp.md: the reference client configurations. */
function documentedConfigurations(): { mcpServers: Record<string, Record<string, unknown>> }[] {
  const doc = readFileSync(join(import.meta.dirname, "..", "docs", "mcp.md"), "utf8");
  return [...doc.matchAll(/```json\n([\s\S]*?)```/g)]
    .map((match) => JSON.parse(match[1] as string))
    .filter((config) => config && typeof config === "object" && "mcpServers" in config);
}

/** What Cursor (`${env:NAME}`) and mcp-remote (`${NAME}`) do to a configured string. */
function expand(text: string, env: Record<string, string | undefined>): string {
  return text.replace(/\$\{(?:env:)?([A-Z_]+)\}/g, (_, name: string) => env[name] ?? "");
}

/** The Authorization header a configured server entry sends, once its variables are expanded. */
function authorizationOf(entry: Record<string, unknown>, env: Record<string, string | undefined>) {
  const headers = entry.headers as Record<string, string> | undefined;
  if (headers?.Authorization) {
    return expand(headers.Authorization, env);
  }
  const args = (entry.args as string[] | undefined) ?? [];
  const header = args[args.indexOf("--header") + 1] ?? "";
  return expand(header, env).replace(/^Authorization:\s*/, "");
}

describe("the reference client configurations", () => {
  it("A10: keep the key in TERMINAL_HOUSE_API_KEY, never in the file, and reach get_lead once the client expands it", async () => {
    const tenant = await stack.startTrial("operator");
    const configurations = documentedConfigurations();
    expect(configurations.length).toBeGreaterThanOrEqual(2);
    for (const configuration of configurations) {
      const entry = configuration.mcpServers["terminal-house"] as Record<string, unknown>;
      const text = JSON.stringify(configuration);
      expect(text).not.toMatch(/th_live_/);
      expect(text).toMatch(/\$\{(env:)?TERMINAL_HOUSE_API_KEY\}/);

      const client = await connect({
        Authorization: authorizationOf(entry, { TERMINAL_HOUSE_API_KEY: tenant.key }),
      });
      try {
        const result = await client.callTool({
          name: "get_lead",
          arguments: { folio: folios[0] },
        });
        expect(result.isError).toBeFalsy();
      } finally {
        await client.close();
      }
      // Without the variable, the same file carries no key and is refused.
      await expect(
        connect({ Authorization: authorizationOf(entry, {}) || "Bearer" }),
      ).rejects.toThrow();
    }
  });
});

describe("search_leads, the same search as GET /v1/leads", () => {
  it("pages up to REST's 200 leads, and refuses a page past it, an unknown signal and a dollar value out of bounds", async () => {
    const tenant = await stack.startTrial("custom");
    await stack.setCustomLimits(tenant.tenantId, { lead_views_per_month: 100_000 });
    const client = await connect({ Authorization: `Bearer ${tenant.key}` });
    try {
      const max = LEAD_SEARCH_BOUNDS.limit.max;
      const page = await client.callTool({ name: "search_leads", arguments: { limit: max } });
      expect(page.isError).toBeFalsy();
      const leads = (page.structuredContent as { leads: unknown[] }).leads;
      expect(leads.length).toBe(Math.min(max, folios.length));
      expect(leads.length).toBeGreaterThan(50);

      for (const refused of [
        { limit: max + 1 },
        { signals: ["absentee_owners"] },
        { min_just_value: LEAD_SEARCH_BOUNDS.min_just_value.max + 1 },
        { min_just_value: -1 },
        { county: 99 },
      ]) {
        const before = await remaining(tenant.key);
        const answer = await client
          .callTool({ name: "search_leads", arguments: refused })
          .catch((error: unknown) => ({ isError: true, thrown: String(error) }));
        expect(answer.isError, JSON.stringify(refused)).toBe(true);
        expect(await remaining(tenant.key)).toBe(before);
      }
    } finally {
      await client.close();
    }
  });
});

async function remaining(key: string): Promise<number> {
  return Number(
    (await stack.request("GET", "/v1/me", { key })).headers["x-quota-lead-views-remaining"],
  );
}
