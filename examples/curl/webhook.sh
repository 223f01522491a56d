#!/usr/bin/env bash
# Create a watchlist and a webhook on it, start a manual run, then receive the delivery on a
# local receiver and verify its signature (curl, jq, socat and openssl).
#   TERMINAL_HOUSE_API_KEY=th_live_... examples/curl/webhook.sh
# Deliveries go to HTTPS URLs only. On your machine, either give WEBHOOK_URL a public HTTPS
# tunnel to RECEIVER_PORT, or start the stack with WEBHOOK_ALLOW_LOOPBACK_HTTP=true (development
# only) to let it deliver to http://127.0.0.1.
set -euo pipefail

# The receiver: socat runs this script once per connection with --receive. It reads one HTTP
# request, checks X-FLPF-Signature against the secret in WEBHOOK_SECRET and answers.
if [ "${1:-}" = --receive ]; then
  signature="" webhook_id="" length=0 cr=$'\r'
  read -r _request_line
  while IFS= read -r line && line=${line%"$cr"} && [ -n "$line" ]; do
    case "${line,,}" in
      x-flpf-signature:*) signature=${line#*: } ;;
      x-flpf-webhook-id:*) webhook_id=${line#*: } ;;
      content-length:*) length=${line#*: } ;;
    esac
  done
  body=$(mktemp)
  head -c "$length" >"$body"
  answer() { printf 'HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$1"; }
  t=$(tr ',' '\n' <<<"$signature" | sed -n 's/^t=//p')
  if [ -z "$signature" ] || [ -z "$t" ]; then answer "400 Bad Request"; exit 0; fi
  if [ $(($(date +%s) - t)) -gt 300 ] || [ $((t - $(date +%s))) -gt 300 ]; then
    answer "400 Bad Request"; exit 0
  fi
  # The signed message is t, a period, then the raw body bytes.
  expected=$({ printf '%s.' "$t"; cat "$body"; } |
    openssl dgst -sha256 -hmac "$WEBHOOK_SECRET" -r | cut -d' ' -f1)
  # Compared as HMACs under a fresh random key, so the comparison leaks no timing of the secret.
  nonce=$(openssl rand -hex 32)
  mac() { printf '%s' "$1" | openssl dgst -sha256 -hmac "$nonce" -r | cut -d' ' -f1; }
  for given in $(tr ',' '\n' <<<"$signature" | sed -n 's/^v1=//p'); do
    if [ "$(mac "$given")" = "$(mac "$expected")" ]; then
      answer "200 OK"
      jq -r --arg id "$webhook_id" \
        '"delivery \($id) verified: \(.match.folio) matched with score \(.match.score)"' \
        "$body" >>"$RECEIVED"
      exit 0
    fi
  done
  answer "401 Unauthorized"
  exit 0
fi

BASE_URL="${TERMINAL_HOUSE_URL:-http://127.0.0.1:8080}"
: "${TERMINAL_HOUSE_API_KEY:?set it to your API key (npm start prints the demo key)}"
RECEIVER_PORT="${RECEIVER_PORT:-4242}"
WEBHOOK_URL="${WEBHOOK_URL:-http://127.0.0.1:$RECEIVER_PORT/terminal-house}"
WAIT_SECONDS="${WAIT_SECONDS:-60}"
api() {
  curl -sS --fail-with-body -X "$1" "$BASE_URL$2" -H "Authorization: Bearer $TERMINAL_HOUSE_API_KEY" \
    ${3:+-H "Content-Type: application/json" -d "$3"}
}

# 1. A watchlist: Miami-Dade parcels worth $5.5 million or more (one in the sample roll).
watchlist=$(api POST /v1/watchlists \
  '{"name":"Quickstart: Miami-Dade over $5.5M","recipe":{"filters":{"counties":[23],"just_value":{"min":5500000}}}}' |
  jq -r .id)
echo "watchlist $watchlist created"
RECEIVED=$(mktemp)
export RECEIVED
cleanup() {
  [ -n "${receiver:-}" ] && kill "$receiver" 2>/dev/null
  api DELETE "/v1/watchlists/$watchlist" >/dev/null
  rm -f "$RECEIVED"
}
trap cleanup EXIT

# 2. The webhook: its signing secret is in this answer only.
endpoint=$(api POST "/v1/watchlists/$watchlist/webhooks" \
  "$(jq -nc --arg url "$WEBHOOK_URL" '{url:$url,events:["watchlist.match"]}')")
export WEBHOOK_SECRET
WEBHOOK_SECRET=$(jq -r .secret <<<"$endpoint")
echo "webhook $(jq -r .id <<<"$endpoint") -> $WEBHOOK_URL"

# 3. The receiver, one process per connection.
socat "TCP-LISTEN:$RECEIVER_PORT,bind=127.0.0.1,reuseaddr,fork" EXEC:"$0 --receive" &
receiver=$!

# 4. A manual run evaluates the recipe now; each match is delivered like an ingest's.
run=$(api POST "/v1/watchlists/$watchlist/run")
echo "manual run $(jq -r .id <<<"$run") started"
for _ in $(seq "$WAIT_SECONDS"); do
  if [ -s "$RECEIVED" ]; then
    head -1 "$RECEIVED"
    exit 0
  fi
  sleep 1
done
echo "no delivery within $WAIT_SECONDS s" >&2
exit 1
