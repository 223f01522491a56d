#!/usr/bin/env bash
# Talk to the MCP server at /mcp with curl: initialize, list the tools, call get_lead. The
# transport is Streamable HTTP, stateless: each JSON-RPC message is one POST answered with JSON.
#   TERMINAL_HOUSE_API_KEY=th_live_... examples/curl/mcp.sh [folio]
set -euo pipefail
BASE_URL="${TERMINAL_HOUSE_URL:-http://127.0.0.1:8080}"
: "${TERMINAL_HOUSE_API_KEY:?set it to your API key (npm start prints the demo key)}"
FOLIO="${1:-23-30418400000000}"

mcp() {
  curl -sS --fail-with-body "$BASE_URL/mcp" \
    -H "Authorization: Bearer $TERMINAL_HOUSE_API_KEY" \
    -H "Content-Type: application/json" \
    -H "Accept: application/json, text/event-stream" \
    -H "MCP-Protocol-Version: 2025-06-18" \
    -d "$1"
}

mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1.0.0"}}}' |
  jq -r '"server: \(.result.serverInfo.name) \(.result.serverInfo.version)"'
mcp '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | jq -r '"tools: \([.result.tools[].name] | join(", "))"'
result=$(mcp "$(jq -nc --arg folio "$FOLIO" \
  '{jsonrpc:"2.0",id:3,method:"tools/call",params:{name:"get_lead",arguments:{folio:$folio}}}')")
if [ "$(jq -r '.result.isError // false' <<<"$result")" = true ]; then
  echo "get_lead failed: $(jq -r '.result.content[0].text' <<<"$result")" >&2
  exit 1
fi
jq -r '.result.content[0].text | fromjson | "get_lead \(.folio): \(.owner.name), just value $\(.valuation.just_value)"' <<<"$result"
