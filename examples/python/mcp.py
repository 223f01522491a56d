#!/usr/bin/env python3
"""Talk to the MCP server at /mcp as a client would: initialize, list the tools, call get_lead.

The transport is Streamable HTTP, stateless: each JSON-RPC message is one POST answered with
JSON. Standard library only.

    TERMINAL_HOUSE_API_KEY=th_live_... python3 examples/python/mcp.py [folio]
"""
import json
import os
import sys
import urllib.request

BASE_URL = os.environ.get("TERMINAL_HOUSE_URL", "http://127.0.0.1:8080")
API_KEY = os.environ.get("TERMINAL_HOUSE_API_KEY") or sys.exit(
    "set TERMINAL_HOUSE_API_KEY to your API key (npm start prints the demo's)"
)
FOLIO = sys.argv[1] if len(sys.argv) > 1 else "23-30418400000000"


def rpc(method, params=None, message_id=None):
    message = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if message_id is not None:
        message["id"] = message_id
    request = urllib.request.Request(
        f"{BASE_URL}/mcp",
        data=json.dumps(message).encode(),
        headers={
            "Authorization": f"Bearer {API_KEY}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
    )
    with urllib.request.urlopen(request) as response:
        body = response.read()
    if message_id is None:
        return None  # a notification has no answer
    answer = json.loads(body)
    if "error" in answer:
        sys.exit(f"{method} failed: {answer['error']}")
    return answer["result"]


server = rpc(
    "initialize",
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "terminal-house-quickstart", "version": "1.0.0"},
    },
    1,
)
print(f"server: {server['serverInfo']['name']} {server['serverInfo']['version']}")
rpc("notifications/initialized")
tools = rpc("tools/list", message_id=2)["tools"]
print(f"tools: {', '.join(tool['name'] for tool in tools)}")

result = rpc("tools/call", {"name": "get_lead", "arguments": {"folio": FOLIO}}, 3)
text = result["content"][0]["text"]
if result.get("isError"):
    sys.exit(f"get_lead failed: {text}")
lead = json.loads(text)
print(f"get_lead {lead['folio']}: {lead['owner']['name']}, just value ${lead['valuation']['just_value']}")
