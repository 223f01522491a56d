// Watchlists and their recipe versions. Every write takes the next `watchlist_change_seq` value
// and notifies `matcher_watchlists` in its transaction, so every matcher instance's cache hears
// of it as soon as it commits (and its one-second poll catches what a lost notification missed).
import { randomBytes } from "node:crypto";
import type { Recipe, Watchlist } from "@th/api-schemas";
import { inTransaction, type Pool, type PoolClient } from "@th/db";
import { ApiError, isUtcInstant } from "@th/service-kit";
import { type NormalizedRecipe, nextRecipeVersion, type RecipeVersion } from "../domain/index.ts";

export const WATCHLIST_CHANNEL = "matcher_watchlists";

/** Makes `client` hear of every committed watchlist change as a notification. */
export async function listenForWatchlistChanges(client: PoolClient): Promise<void> {
  await client.query(`LISTEN ${WATCHLIST_CHANNEL}`);
}

export async function stopListeningForWatchlistChanges(client: PoolClient): Promise<void> {
  await client.query(`UNLISTEN ${WATCHLIST_CHANNEL}`);
}

export function newWatchlistId(): string {
  return `wl_${randomBytes(10).toString("hex")}`;
}

export interface WatchlistRow {
  id: string;
  tenant_id: string;
  name: string;
  current_version: number;
  created_at: Date;
  updated_at: Date;
  recipe: NormalizedRecipe;
  fingerprint: string;
  effective_from: Date;
  match_count: string | null;
  last_match_at: Date | null;
}

const SELECT_WATCHLIST = `
  SELECT w.id, w.tenant_id, w.name, w.current_version, w.created_at, w.updated_at,
         v.recipe, v.fingerprint, v.effective_from,
         (SELECT count(*) FROM matches m WHERE m.watchlist_id = w.id) AS match_count,
         (SELECT max(created_at) FROM matches m WHERE m.watchlist_id = w.id) AS last_match_at
    FROM watchlists w
    JOIN recipe_versions v ON v.watchlist_id = w.id AND v.version = w.current_version`;

function toWatchlist(row: WatchlistRow): Watchlist {
  return {
    id: row.id,
    name: row.name,
    recipe: row.recipe as Recipe,
    recipe_version: row.current_version,
    recipe_fingerprint: row.fingerprint,
    recipe_effective_from: row.effective_from.toISOString(),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    last_match_at: row.last_match_at ? row.last_match_at.toISOString() : null,
    match_count: Number(row.match_count ?? 0),
  };
}

function notFound(id: string): ApiError {
  return new ApiError("not_found", `no watchlist ${id}`);
}

// Writers hold this advisory lock shared from their first statement to commit, and read the
// clock under it; a cache refresh takes it exclusively. So a change the refresh did not see
// started after the refresh, and its effective_from is later than the refresh's clock: the
// cache is exact for every parcel observed before that clock.
const WATCHLIST_WRITE_LOCK = 7_311_446_900;

/** Enters the write section and returns the database clock as an instant. */
async function beginWrite(client: PoolClient): Promise<string> {
  const { rows } = await client.query<{ now: Date }>(
    "SELECT pg_advisory_xact_lock_shared($1), clock_timestamp() AS now",
    [WATCHLIST_WRITE_LOCK],
  );
  return (rows[0]?.now ?? new Date()).toISOString();
}

async function notify(client: PoolClient, id: string): Promise<void> {
  await client.query("SELECT pg_notify($1, $2)", [WATCHLIST_CHANNEL, id]);
}

async function insertVersion(client: PoolClient, version: RecipeVersion): Promise<void> {
  await client.query(
    `INSERT INTO recipe_versions (watchlist_id, version, recipe, fingerprint, effective_from)
     VALUES ($1, $2, $3, $4, $5)`,
    [
      version.watchlist_id,
      version.version,
      JSON.stringify(version.recipe),
      version.fingerprint,
      version.effective_from,
    ],
  );
}

export function encodeListCursor(createdAt: Date, id: string): string {
  return Buffer.from(`w:${createdAt.toISOString()}|${id}`, "utf8").toString("base64url");
}

export function decodeListCursor(cursor: string): { createdAt: string; id: string } | null {
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const match = /^w:(\d{4}-\d\d-\d\dT[\d:.]+Z)\|(wl_[0-9a-f]+)$/.exec(text);
  if (!match) {
    return null;
  }
  const [, createdAt = "", id = ""] = match;
  return isUtcInstant(createdAt) ? { createdAt, id } : null;
}

async function getRow(
  client: Pool | PoolClient,
  tenantId: string,
  id: string,
): Promise<WatchlistRow | undefined> {
  const { rows } = await client.query<WatchlistRow>(
    `${SELECT_WATCHLIST} WHERE w.id = $1 AND w.tenant_id = $2 AND w.deleted_at IS NULL`,
    [id, tenantId],
  );
  return rows[0];
}

/** The version a watchlist row is at, as the recipe history records it. */
export function rowVersion(row: WatchlistRow): RecipeVersion {
  return {
    watchlist_id: row.id,
    version: row.current_version,
    recipe: row.recipe,
    fingerprint: row.fingerprint,
    effective_from: row.effective_from.toISOString(),
  };
}

/** The first `limit` rows of a page read one row long, and whether more follow. */
export function pageOf<T>(rows: T[], limit: number): { shown: T[]; more: boolean } {
  return { shown: rows.slice(0, limit), more: rows.length > limit };
}

/** Refuses a new watchlist once the tenant has `max`; serialized per tenant so it cannot race. */
async function enforceWatchlistCap(client: PoolClient, tenantId: string, max: number) {
  // One transaction per tenant at a time past this point, so the cap cannot be raced.
  await client.query("SELECT pg_advisory_xact_lock(hashtext('watchlists:' || $1))", [tenantId]);
  const { rows } = await client.query<{ count: string }>(
    "SELECT count(*) FROM watchlists WHERE tenant_id = $1 AND deleted_at IS NULL",
    [tenantId],
  );
  if (Number(rows[0]?.count ?? 0) >= max) {
    throw new ApiError("conflict", `a tenant keeps at most ${max} watchlists; delete one first`);
  }
}

async function insertWatchlist(
  client: PoolClient,
  id: string,
  input: { tenantId: string; name: string; recipe: Recipe },
  maxPerTenant: number,
): Promise<void> {
  const now = await beginWrite(client);
  const { version } = nextRecipeVersion(undefined, id, input.recipe, now);
  await enforceWatchlistCap(client, input.tenantId, maxPerTenant);
  await client.query(
    `INSERT INTO watchlists (id, tenant_id, name, current_version, created_at, updated_at)
     VALUES ($1, $2, $3, 1, $4, $4)`,
    [id, input.tenantId, input.name, now],
  );
  await insertVersion(client, version);
  await notify(client, id);
}

/** Locks a live watchlist of the tenant for a change and reads it; 404 when there is none. */
async function lockLiveRow(client: PoolClient, tenantId: string, id: string) {
  const locked = await client.query<{ id: string }>(
    `SELECT id FROM watchlists
      WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL FOR UPDATE`,
    [id, tenantId],
  );
  if (locked.rowCount === 0) {
    throw notFound(id);
  }
  const row = await getRow(client, tenantId, id);
  if (!row) {
    throw notFound(id);
  }
  return row;
}

/** The version number after a recipe change: a new version only when the recipe differs. */
async function versionAfter(
  client: PoolClient,
  row: WatchlistRow,
  recipe: Recipe | undefined,
  now: string,
): Promise<number> {
  if (recipe === undefined) {
    return row.current_version;
  }
  const next = nextRecipeVersion(rowVersion(row), row.id, recipe, now);
  if (!next.changed) {
    return row.current_version;
  }
  await insertVersion(client, next.version);
  return next.version.version;
}

async function applyChange(
  client: PoolClient,
  tenantId: string,
  id: string,
  change: { name?: string | undefined; recipe?: Recipe | undefined },
): Promise<void> {
  const now = await beginWrite(client);
  const row = await lockLiveRow(client, tenantId, id);
  const version = await versionAfter(client, row, change.recipe, now);
  const name = change.name ?? row.name;
  if (version === row.current_version && name === row.name) {
    return;
  }
  await client.query(
    `UPDATE watchlists
        SET name = $3, current_version = $4, updated_at = $5,
            change_seq = nextval('watchlist_change_seq')
      WHERE id = $1 AND tenant_id = $2`,
    [id, tenantId, name, version, now],
  );
  await notify(client, id);
}

async function softDelete(client: PoolClient, tenantId: string, id: string): Promise<void> {
  const now = await beginWrite(client);
  const result = await client.query(
    `UPDATE watchlists SET deleted_at = $3, change_seq = nextval('watchlist_change_seq')
      WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL`,
    [id, tenantId, now],
  );
  if (result.rowCount === 0) {
    throw notFound(id);
  }
  await notify(client, id);
}

/** The position a list continues after; a cursor this API did not issue is a 400. */
function listPosition(cursor: string | undefined): { createdAt: string; id: string } | null {
  if (cursor === undefined) {
    return null;
  }
  const after = decodeListCursor(cursor);
  if (after === null) {
    throw new ApiError("invalid_request", "cursor is not one this API issued", {
      fields: [{ path: "querystring.cursor", message: "is not a cursor this API issued" }],
    });
  }
  return after;
}

async function listPage(
  pool: Pool,
  tenantId: string,
  page: { cursor?: string | undefined; limit: number },
): Promise<{ data: Watchlist[]; next_cursor: string | null }> {
  const after = listPosition(page.cursor);
  const { rows } = await pool.query<WatchlistRow>(
    `${SELECT_WATCHLIST}
      WHERE w.tenant_id = $1 AND w.deleted_at IS NULL
        AND ($2::timestamptz IS NULL OR (w.created_at, w.id) > ($2::timestamptz, $3::text))
      ORDER BY w.created_at, w.id
      LIMIT $4`,
    [tenantId, after?.createdAt ?? null, after?.id ?? "", page.limit + 1],
  );
  const { shown, more } = pageOf(rows, page.limit);
  const last = shown[shown.length - 1];
  return {
    data: shown.map(toWatchlist),
    next_cursor: more && last ? encodeListCursor(last.created_at, last.id) : null,
  };
}

export function createWatchlistStore(pool: Pool, options: { maxPerTenant: number }) {
  async function liveRow(tenantId: string, id: string): Promise<WatchlistRow> {
    const row = await getRow(pool, tenantId, id);
    if (!row) {
      throw notFound(id);
    }
    return row;
  }

  return {
    async create(input: { tenantId: string; name: string; recipe: Recipe }): Promise<Watchlist> {
      const id = newWatchlistId();
      await inTransaction(pool, (client) =>
        insertWatchlist(client, id, input, options.maxPerTenant),
      );
      const created = await getRow(pool, input.tenantId, id);
      if (!created) {
        throw new Error(`watchlist ${id} vanished after insert`);
      }
      return toWatchlist(created);
    },

    async get(tenantId: string, id: string): Promise<Watchlist> {
      return toWatchlist(await liveRow(tenantId, id));
    },

    /** Throws 404 unless the watchlist is the tenant's and live. */
    async assertOwned(tenantId: string, id: string): Promise<void> {
      const { rowCount } = await pool.query(
        "SELECT 1 FROM watchlists WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL",
        [id, tenantId],
      );
      if (rowCount === 0) {
        throw notFound(id);
      }
    },

    /** The current recipe version of a live watchlist of the tenant. */
    async currentVersion(tenantId: string, id: string): Promise<RecipeVersion & { name: string }> {
      const row = await liveRow(tenantId, id);
      return { ...rowVersion(row), name: row.name };
    },

    async list(
      tenantId: string,
      page: { cursor?: string | undefined; limit: number },
    ): Promise<{ data: Watchlist[]; next_cursor: string | null }> {
      return listPage(pool, tenantId, page);
    },

    async update(
      tenantId: string,
      id: string,
      change: { name?: string | undefined; recipe?: Recipe | undefined },
    ): Promise<Watchlist> {
      await inTransaction(pool, (client) => applyChange(client, tenantId, id, change));
      return this.get(tenantId, id);
    },

    async remove(tenantId: string, id: string): Promise<void> {
      await inTransaction(pool, (client) => softDelete(client, tenantId, id));
    },
  };
}

export type WatchlistStore = ReturnType<typeof createWatchlistStore>;

/** A watchlist as the matching cache holds it: every version, for parcels of any age. */
export interface WatchlistSnapshot {
  id: string;
  tenantId: string;
  name: string;
  deleted: boolean;
  versions: { version: number; recipe: NormalizedRecipe; effectiveFromMs: number }[];
}

/**
 * Every watchlist changed after `sinceSeq`, with all of its versions, plus the database clock
 * and the highest change number at the moment of reading: the cache is exact for parcels
 * observed before that instant.
 */
export async function loadWatchlistChanges(
  pool: Pool,
  sinceSeq: bigint,
): Promise<{ seq: bigint; atMs: number; changed: WatchlistSnapshot[] }> {
  const client = await pool.connect();
  try {
    // Exclusive: waits for writes in flight to commit and holds new ones off while reading, so
    // the clock, the high mark and the rows describe one state.
    await client.query("BEGIN READ ONLY");
    await client.query("SELECT pg_advisory_xact_lock($1)", [WATCHLIST_WRITE_LOCK]);
    const head = await client.query<{ at: Date; seq: string }>(
      "SELECT clock_timestamp() AS at, coalesce(max(change_seq), 0)::text AS seq FROM watchlists",
    );
    const { rows } = await client.query<{
      id: string;
      tenant_id: string;
      name: string;
      deleted: boolean;
      versions: { version: number; recipe: NormalizedRecipe; effective_from: string }[];
    }>(
      `SELECT w.id, w.tenant_id, w.name, w.deleted_at IS NOT NULL AS deleted,
              coalesce(json_agg(json_build_object(
                'version', v.version, 'recipe', v.recipe,
                'effective_from', to_char(v.effective_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
              ) ORDER BY v.version) FILTER (WHERE v.version IS NOT NULL), '[]') AS versions
         FROM watchlists w
         LEFT JOIN recipe_versions v ON v.watchlist_id = w.id AND w.deleted_at IS NULL
        WHERE w.change_seq > $1
        GROUP BY w.id`,
      [sinceSeq.toString()],
    );
    await client.query("COMMIT");
    const headRow = head.rows[0];
    return {
      seq: BigInt(headRow?.seq ?? "0"),
      atMs: headRow?.at.getTime() ?? 0,
      changed: rows.map((row) => ({
        id: row.id,
        tenantId: row.tenant_id,
        name: row.name,
        deleted: row.deleted,
        versions: row.versions.map((version) => ({
          version: version.version,
          recipe: version.recipe,
          effectiveFromMs: Date.parse(version.effective_from),
        })),
      })),
    };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
