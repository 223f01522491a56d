#!/usr/bin/env python3
"""Export leads as CSV (one lead-view per row) and save the file (standard library only).

    TERMINAL_HOUSE_API_KEY=th_live_... python3 examples/python/export_csv.py [out.csv]
"""
import csv
import os
import sys
import urllib.parse
import urllib.request

BASE_URL = os.environ.get("TERMINAL_HOUSE_URL", "http://127.0.0.1:8080")
API_KEY = os.environ.get("TERMINAL_HOUSE_API_KEY") or sys.exit(
    "set TERMINAL_HOUSE_API_KEY to your API key (npm start prints the demo's)"
)
OUT = sys.argv[1] if len(sys.argv) > 1 else "leads.csv"

# Miami-Dade parcels with an absentee owner, at most 25 rows.
query = urllib.parse.urlencode({"county": 23, "signals": "absentee_owner", "max_rows": 25})
request = urllib.request.Request(
    f"{BASE_URL}/v1/exports/leads.csv?{query}", headers={"Authorization": f"Bearer {API_KEY}"}
)
with urllib.request.urlopen(request) as response, open(OUT, "wb") as out:
    # Streamed to the file as it arrives: an export can be long.
    while chunk := response.read(65536):
        out.write(chunk)

with open(OUT, newline="", encoding="utf-8") as saved:
    rows = list(csv.DictReader(saved))
print(f"wrote {len(rows)} leads to {OUT}")
if rows:
    print(f"first: {rows[0]['folio']}")
