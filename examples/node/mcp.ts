// Connect an MCP client to the server at /mcp, list its tools and call get_lead.
//   TERMINAL_HOUSE_API_KEY=th_live_... node examples/node/mcp.ts [folio]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const baseUrl = process.env.TERMINAL_HOUSE_URL ?? "http://127.0.0.1:8080";
const key = process.env.TERMINAL_HOUSE_API_KEY;
if (!key) {
  console.error("set TERMINAL_HOUSE_API_KEY to your API key (npm start prints the demo's)");
  process.exit(2);
}
const folio = process.argv[2] ?? "23-30418400000000";

const client = new Client({ name: "terminal-house-quickstart", version: "1.0.0" });
await client.connect(
  new StreamableHTTPClientTransport(new URL("/mcp", baseUrl), {
    // The key travels only in the Authorization header, never in the URL.
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  }),
);
const { tools } = await client.listTools();
console.log(`tools: ${tools.map((tool) => tool.name).join(", ")}`);

const result = await client.callTool({ name: "get_lead", arguments: { folio } });
const [content] = result.content as { type: string; text: string }[];
if (result.isError || !content) {
  console.error(`get_lead failed: ${content?.text}`);
  process.exit(1);
}
const lead = JSON.parse(content.text) as {
  folio: string;
  owner: { name: string };
  valuation: { just_value: number };
};
console.log(`get_lead ${lead.folio}: ${lead.owner.name}, just value $${lead.valuation.just_value}`);
await client.close();
