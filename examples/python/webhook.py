#!/usr/bin/env python3
"""Create a watchlist and a webhook on it, start a manual run, then receive the delivery on a
local server and verify its signature (standard library only).

    TERMINAL_HOUSE_API_KEY=th_live_... python3 examples/python/webhook.py

Deliveries go to HTTPS URLs only. On your machine, either give WEBHOOK_URL a public HTTPS tunnel
to RECEIVER_PORT, or start the stack with WEBHOOK_ALLOW_LOOPBACK_HTTP=true (development only) to
let it deliver to http://127.0.0.1.
"""
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

BASE_URL = os.environ.get("TERMINAL_HOUSE_URL", "http://127.0.0.1:8080")
API_KEY = os.environ.get("TERMINAL_HOUSE_API_KEY") or sys.exit(
    "set TERMINAL_HOUSE_API_KEY to your API key (npm start prints the demo's)"
)
WAIT_SECONDS = float(os.environ.get("WAIT_SECONDS", "60"))
TOLERANCE_SECONDS = 300


def api(method, path, body=None):
    headers = {"Authorization": f"Bearer {API_KEY}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(
        f"{BASE_URL}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers=headers,
    )
    with urllib.request.urlopen(request) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


def verify(raw_body, header, secrets):
    """X-FLPF-Signature: t=<unix seconds>,v1=<hex HMAC-SHA-256 of t.body>[,v1=...]."""
    if not header:
        return 400, "missing signature"
    parts = [part.split("=", 1) for part in header.split(",") if "=" in part]
    stamps = [value for key, value in parts if key == "t"]
    signatures = [value for key, value in parts if key == "v1"]
    if len(stamps) != 1 or not stamps[0].isdigit() or not signatures:
        return 400, "malformed signature"
    if abs(time.time() - int(stamps[0])) > TOLERANCE_SECONDS:
        return 400, "stale timestamp"
    signed = stamps[0].encode() + b"." + raw_body
    for secret in secrets:
        expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(expected, signature) for signature in signatures):
            return 200, "ok"
    return 401, "bad signature"


secrets = []
received = []
arrived = threading.Event()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        # The signature covers the raw bytes: verify them before parsing.
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, reason = verify(raw, self.headers.get("X-FLPF-Signature"), secrets)
        self.send_response(status)
        self.end_headers()
        self.wfile.write(reason.encode())
        if status == 200:
            received.append((self.headers["X-FLPF-Webhook-Id"], json.loads(raw)))
            arrived.set()

    def log_message(self, *args):
        pass


# 1. A watchlist: Miami-Dade parcels worth $5.5 million or more (one in the sample roll).
watchlist = api(
    "POST",
    "/v1/watchlists",
    {
        "name": "Quickstart: Miami-Dade over $5.5M",
        "recipe": {"filters": {"counties": [23], "just_value": {"min": 5500000}}},
    },
)
print(f"watchlist {watchlist['id']} created")

# 2. The receiver, on RECEIVER_PORT (any free port by default).
server = HTTPServer(("127.0.0.1", int(os.environ.get("RECEIVER_PORT", "0"))), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = os.environ.get("WEBHOOK_URL") or f"http://127.0.0.1:{server.server_port}/terminal-house"

try:
    # 3. The webhook: its signing secret is in this answer only.
    endpoint = api("POST", f"/v1/watchlists/{watchlist['id']}/webhooks", {"url": url, "events": ["watchlist.match"]})
    secrets.append(endpoint["secret"])
    print(f"webhook {endpoint['id']} -> {url}")

    # 4. A manual run evaluates the recipe now; each match is delivered like an ingest's.
    run = api("POST", f"/v1/watchlists/{watchlist['id']}/run")
    print(f"manual run {run['id']} started")

    if not arrived.wait(WAIT_SECONDS):
        sys.exit(f"no delivery within {WAIT_SECONDS:g} s")
    webhook_id, event = received[0]
    match = event["match"]
    print(f"delivery {webhook_id} verified: {match['folio']} matched with score {match['score']}")
finally:
    server.shutdown()
    # Clean up, so running this again starts afresh.
    api("DELETE", f"/v1/watchlists/{watchlist['id']}")
