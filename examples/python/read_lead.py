#!/usr/bin/env python3
"""Read one lead and print what is left of this month's lead-view quota (standard library only).

    TERMINAL_HOUSE_API_KEY=th_live_... python3 examples/python/read_lead.py [folio]
"""
import json
import os
import sys
import urllib.error
import urllib.request

BASE_URL = os.environ.get("TERMINAL_HOUSE_URL", "http://127.0.0.1:8080")
API_KEY = os.environ.get("TERMINAL_HOUSE_API_KEY") or sys.exit(
    "set TERMINAL_HOUSE_API_KEY to your API key (npm start prints the demo's)"
)
# The first parcel of the sample roll `npm start` loads; pass any folio instead.
FOLIO = sys.argv[1] if len(sys.argv) > 1 else "23-30418400000000"

request = urllib.request.Request(
    f"{BASE_URL}/v1/leads/{FOLIO}", headers={"Authorization": f"Bearer {API_KEY}"}
)
try:
    with urllib.request.urlopen(request) as response:
        lead = json.load(response)
        headers = response.headers
except urllib.error.HTTPError as error:
    body = json.load(error)
    if error.code == 402:
        sys.exit(f"quota spent until {body['quota_resets_at']}; upgrade: {body['upgrade_url']}")
    if error.code == 429:
        sys.exit(f"rate limited: retry in {body['retry_after_seconds']} s")
    sys.exit(f"{error.code} {body['error']}: {body['detail']}")

print(f"{lead['folio']}  {lead['address']['formatted']}")
print(f"owner          {lead['owner']['name']}")
print(f"just value     ${lead['valuation']['just_value']}")
print(f"signals        {', '.join(lead['signals_fired']) or 'none'}")
print(
    f"quota left     {headers['X-Quota-Lead-Views-Remaining']} of "
    f"{headers['X-Quota-Lead-Views-Limit']} lead-views, resets {headers['X-Quota-Resets']}"
)
print(
    f"rate left      {headers['X-RateLimit-Remaining']} of {headers['X-RateLimit-Limit']} "
    "requests this minute"
)
