#!/usr/bin/env bash
# Read one lead and print what is left of this month's lead-view quota (curl and jq).
#   TERMINAL_HOUSE_API_KEY=th_live_... examples/curl/read-lead.sh [folio]
set -euo pipefail
BASE_URL="${TERMINAL_HOUSE_URL:-http://127.0.0.1:8080}"
: "${TERMINAL_HOUSE_API_KEY:?set it to your API key (npm start prints the demo key)}"
# The first parcel of the sample roll `npm start` loads; pass any folio instead.
FOLIO="${1:-23-30418400000000}"

headers=$(mktemp)
trap 'rm -f "$headers"' EXIT
# The key goes in the Authorization header only; in a URL it is refused.
body=$(curl -sS -D "$headers" -H "Authorization: Bearer $TERMINAL_HOUSE_API_KEY" \
  "$BASE_URL/v1/leads/$FOLIO")
status=$(head -1 "$headers" | cut -d' ' -f2)
header() { grep -i "^$1:" "$headers" | cut -d' ' -f2- | tr -d '\r'; }

if [ "$status" != 200 ]; then
  echo "$status $(jq -r '"\(.error): \(.detail)"' <<<"$body")" >&2
  [ "$status" = 402 ] && echo "upgrade: $(jq -r .upgrade_url <<<"$body")" >&2
  [ "$status" = 429 ] && echo "retry in $(header Retry-After) s" >&2
  exit 1
fi
jq -r '"\(.folio)  \(.address.formatted)\nowner          \(.owner.name)\njust value     $\(.valuation.just_value)"' <<<"$body"
echo "quota left     $(header X-Quota-Lead-Views-Remaining) of $(header X-Quota-Lead-Views-Limit) lead-views, resets $(header X-Quota-Resets)"
echo "rate left      $(header X-RateLimit-Remaining) of $(header X-RateLimit-Limit) requests this minute"
