#!/usr/bin/env bash
# Export leads as CSV (one lead-view per row) and save the file (curl).
#   TERMINAL_HOUSE_API_KEY=th_live_... examples/curl/export-csv.sh [out.csv]
set -euo pipefail
BASE_URL="${TERMINAL_HOUSE_URL:-http://127.0.0.1:8080}"
: "${TERMINAL_HOUSE_API_KEY:?set it to your API key (npm start prints the demo key)}"
OUT="${1:-leads.csv}"

# Miami-Dade parcels with an absentee owner, at most 25 rows. --fail: an error is not saved as CSV.
curl -sS --fail-with-body -o "$OUT" -H "Authorization: Bearer $TERMINAL_HOUSE_API_KEY" \
  "$BASE_URL/v1/exports/leads.csv?county=23&signals=absentee_owner&max_rows=25"
echo "wrote $(($(wc -l <"$OUT") - 1)) leads to $OUT"
echo "columns: $(head -1 "$OUT")"
