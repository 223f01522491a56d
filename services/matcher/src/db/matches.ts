// The match rows and their `match.found` records, written in one transaction through the
// transactional outbox. The primary key on match_id makes a second insert of the same match a
// no-op, and only rows actually inserted get an outbox record: a redelivered parcel.ingested
// never yields a second event. Each outbox record keeps the trace context of the work it
// continues (the parcel.ingested record a match came from), so the relay publishes match.found
// in the ingest's trace.
import type { MatchSummary } from "@th/api-schemas";
import { contracts, type MatchFound } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import { ApiError, outboxShard } from "@th/service-kit";
import { traceContextOf } from "@th/telemetry";

export interface NewMatch {
  event: MatchFound;
  runId: string | null;
  /** W3C trace context for its match.found; the active context's when absent. */
  traceContext?: Readonly<Record<string, string>>;
}

/**
 * The matches that are new and their outbox records, in one statement (one round trip): only the
 * rows the insert actually added get a record, in the order found, so one tenant's events keep
 * their order on its partition; a match twice in one call (a record redelivered into the same
 * batch) is enqueued once. The events travel as one JSON document: pg would otherwise escape
 * each payload into an array literal, and Postgres parse it back.
 */
const INSERT_MATCHES_SQL = `
WITH inserted AS (
  INSERT INTO matches (match_id, tenant_id, watchlist_id, recipe_version, folio, content_hash,
                       trigger, run_id, score, signals_fired, observed_at, created_at)
  SELECT m.match_id, m.tenant_id, m.watchlist_id, m.recipe_version, m.folio, m.content_hash,
         m.trigger, m.run_id, m.score, string_to_array(m.signals, ','), m.observed_at, m.found_at
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[],
                $7::text[], $8::text[], $9::float8[], $10::text[], $11::timestamptz[],
                $14::timestamptz[])
         WITH ORDINALITY AS m(match_id, tenant_id, watchlist_id, recipe_version, folio,
                              content_hash, trigger, run_id, score, signals, observed_at,
                              found_at, ord)
   ORDER BY m.ord
  ON CONFLICT (match_id) DO NOTHING
  RETURNING match_id
), events AS (
  SELECT DISTINCT ON (e.item -> 'p' ->> 'match_id') e.item, e.ord
    FROM jsonb_array_elements($12::jsonb) WITH ORDINALITY AS e(item, ord)
   WHERE (e.item -> 'p' ->> 'match_id')::uuid IN (SELECT match_id FROM inserted)
   ORDER BY e.item -> 'p' ->> 'match_id', e.ord
), queued AS (
  INSERT INTO outbox (topic, payload, headers, shard)
  SELECT $13, item -> 'p', item -> 'h', (item ->> 's')::smallint FROM events ORDER BY ord
  RETURNING 1
)
SELECT count(*)::int AS queued FROM queued`;

/**
 * Inserts the matches that are new and enqueues their events; returns how many were new. A match
 * is stored as made when its event says it occurred (the matcher's clock when it judged the
 * parcel), so the row, its `matched_at` and its `match.found` tell one time, and retention ages
 * it by that clock.
 */
export async function insertMatches(
  client: PoolClient,
  matches: readonly NewMatch[],
): Promise<number> {
  if (matches.length === 0) {
    return 0;
  }
  const active = matches.every((m) => m.traceContext) ? {} : traceContextOf();
  const events = matches.map((m) => {
    const headers = m.traceContext ?? active;
    const s = outboxShard(contracts.matchFound, m.event);
    return Object.keys(headers).length > 0 ? { p: m.event, h: headers, s } : { p: m.event, s };
  });
  const { rows } = await client.query<{ queued: number }>(INSERT_MATCHES_SQL, [
    matches.map((m) => m.event.match_id),
    matches.map((m) => m.event.tenant_id),
    matches.map((m) => m.event.watchlist.id),
    matches.map((m) => m.event.recipe_version),
    matches.map((m) => m.event.match.folio),
    matches.map((m) => m.event.parcel_content_hash),
    matches.map((m) => m.event.trigger),
    matches.map((m) => m.runId),
    matches.map((m) => m.event.match.score),
    matches.map((m) => m.event.match.signals_fired.join(",")),
    matches.map((m) => m.event.match.observed_at),
    JSON.stringify(events),
    contracts.matchFound.topic,
    matches.map((m) => m.event.occurred_at),
  ]);
  return rows[0]?.queued ?? 0;
}

/** Polling cursor: the (transaction id, sequence) of the last match handed out. */
export function encodeMatchCursor(txId: string, seq: string): string {
  return Buffer.from(`m:${txId}.${seq}`, "utf8").toString("base64url");
}

/** The largest transaction id (xid8) and sequence value (bigint) a cursor can carry. */
const MAX_TX_ID = 2n ** 64n - 1n;
const MAX_SEQ = 2n ** 63n - 1n;

function decodeMatchCursor(cursor: string): { txId: string; seq: string } | null {
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const match = /^m:(\d{1,20})\.(\d{1,20})$/.exec(text);
  if (!match) {
    return null;
  }
  const [, txId = "", seq = ""] = match;
  // Past these Postgres refuses the value, which would fail the query instead of the cursor.
  return BigInt(txId) <= MAX_TX_ID && BigInt(seq) <= MAX_SEQ ? { txId, seq } : null;
}

const START = { txId: "0", seq: "0" };

/** How long matches are kept, so a refused cursor can say how far back polling reaches. */
export interface MatchRetention {
  keepMs: number;
  now: () => Date;
}

interface PollRow {
  expired: boolean;
  match_id: string | null;
  folio: string;
  score: number;
  signals_fired: string[];
  observed_at: Date;
  recipe_version: number;
  trigger: "ingest" | "manual_run";
  created_at: Date;
  tx_id: string;
  seq: string;
}

/**
 * One statement, so one snapshot: the watchlist's retention mark and its page are read together,
 * and a sweep that removes matches (and raises the mark in the same statement) is seen whole or
 * not at all. `expired`: a match after the cursor was removed, so the page would skip it; the
 * page is then not read. Without a cursor there is nothing to skip: polling starts at the oldest
 * match kept. The order names the table's columns: a bare `tx_id, seq` would sort by the text
 * aliases of the select list, "10" before "9", and pages would skip and repeat matches.
 */
const POLL_SQL = `
SELECT k.expired, m.match_id, m.folio, m.score, m.signals_fired, m.observed_at, m.recipe_version,
       m.trigger, m.created_at, m.tx_id::text AS tx_id, m.seq::text AS seq
  FROM (SELECT coalesce(
          (SELECT (r.removed_tx_id, r.removed_seq) > ($2::xid8, $3::bigint)
             FROM match_retention_marks r WHERE r.watchlist_id = $1 AND $5::boolean),
          false) AS expired) k
  LEFT JOIN LATERAL (
    SELECT * FROM matches m
     WHERE m.watchlist_id = $1
       AND (m.tx_id, m.seq) > ($2::xid8, $3::bigint)
       AND m.tx_id < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY m.tx_id, m.seq
     LIMIT $4) m ON NOT k.expired
 ORDER BY m.tx_id, m.seq`;

/** The refusal of a cursor that points before matches retention removed. */
function cursorExpired(retention: MatchRetention): ApiError {
  const days = Math.round(retention.keepMs / 86_400_000);
  const since = new Date(retention.now().getTime() - retention.keepMs).toISOString();
  return new ApiError(
    "cursor_expired",
    `the cursor points before matches that were removed: matches are kept ${days} days, so polling reaches back to ${since}; poll again without a cursor to start from the oldest match kept`,
    { retained_since: since },
  );
}

/**
 * A watchlist's matches after the cursor, oldest first. Only matches of transactions older than
 * every transaction still in flight are shown, so nothing can later appear behind the cursor. A
 * cursor after which a match was removed is refused (410 `cursor_expired`), never answered with
 * a page that silently leaves the removed matches out.
 */
export async function listMatches(
  pool: Pool,
  watchlistId: string,
  page: { cursor?: string | undefined; limit: number },
  retention: MatchRetention,
): Promise<{ matches: MatchSummary[]; next_cursor: string; has_more: boolean }> {
  let after = START;
  if (page.cursor !== undefined) {
    const decoded = decodeMatchCursor(page.cursor);
    if (decoded === null) {
      throw new ApiError("invalid_request", "cursor is not one this API issued", {
        fields: [{ path: "querystring.cursor", message: "is not a cursor this API issued" }],
      });
    }
    after = decoded;
  }
  const { rows } = await pool.query<PollRow>(POLL_SQL, [
    watchlistId,
    after.txId,
    after.seq,
    page.limit + 1,
    page.cursor !== undefined,
  ]);
  if (rows[0]?.expired) {
    throw cursorExpired(retention);
  }
  const found = rows.filter((row) => row.match_id !== null);
  const hasMore = found.length > page.limit;
  const shown = found.slice(0, page.limit);
  const last = shown[shown.length - 1];
  return {
    matches: shown.map((row) => ({
      match_id: row.match_id as string,
      folio: row.folio,
      score: row.score,
      signals_fired: row.signals_fired,
      observed_at: row.observed_at.toISOString(),
      recipe_version: row.recipe_version,
      trigger: row.trigger,
      matched_at: row.created_at.toISOString(),
    })),
    next_cursor: last
      ? encodeMatchCursor(last.tx_id, last.seq)
      : encodeMatchCursor(after.txId, after.seq),
    has_more: hasMore,
  };
}

/**
 * The distinct folios among a watchlist's first `atMost` matches in polling order (the rows a CSV
 * export writes): an export costs one lead-view per parcel, so a folio matched twice is priced
 * once.
 */
export async function exportFolios(
  pool: Pool,
  watchlistId: string,
  atMost: number,
): Promise<string[]> {
  const { rows } = await pool.query<{ folio: string }>(
    `SELECT DISTINCT w.folio FROM (
       SELECT m.folio FROM matches m
        WHERE m.watchlist_id = $1 AND m.tx_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY m.tx_id, m.seq LIMIT $2
     ) w`,
    [watchlistId, atMost],
  );
  return rows.map((row) => row.folio);
}
