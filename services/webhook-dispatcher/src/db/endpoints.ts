// The endpoints table: a removed endpoint keeps its row (its deliveries and secrets refer to it)
// and is marked `deleted_at`, which every read here skips.
import type { Pool, PoolClient } from "@th/db";
import type { EndpointRecord } from "../domain/endpoints.ts";

type Queryable = Pool | PoolClient;

/**
 * Holds the tenant's subscribe lock until the transaction ends: one subscribe of a tenant at a
 * time counts and inserts, so a burst cannot all count the same free places. The two-key lock
 * keeps these apart from any other advisory lock on the database.
 */
export async function lockTenantSubscribes(client: PoolClient, tenantId: string): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock(hashtext('webhook-endpoints'), hashtext($1))", [
    tenantId,
  ]);
}

/** The tenant's endpoints and those of one of its watchlists, removed ones left out. */
export async function countEndpoints(
  db: Queryable,
  tenantId: string,
  watchlistId: string,
): Promise<{ tenant: number; watchlist: number }> {
  const { rows } = await db.query<{ tenant: number; watchlist: number }>(
    `SELECT count(*)::int AS tenant, (count(*) FILTER (WHERE watchlist_id = $2))::int AS watchlist
       FROM endpoints WHERE tenant_id = $1 AND deleted_at IS NULL`,
    [tenantId, watchlistId],
  );
  return rows[0] ?? { tenant: 0, watchlist: 0 };
}

export async function insertEndpoint(
  client: PoolClient,
  endpoint: { id: string; tenantId: string; watchlistId: string; url: string; events: string[] },
): Promise<Date | undefined> {
  const { rows } = await client.query<{ created_at: Date }>(
    `INSERT INTO endpoints (id, tenant_id, watchlist_id, url, events)
     VALUES ($1, $2, $3, $4, $5) RETURNING created_at`,
    [endpoint.id, endpoint.tenantId, endpoint.watchlistId, endpoint.url, endpoint.events],
  );
  return rows[0]?.created_at;
}

export async function selectEndpoint(
  db: Queryable,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
): Promise<EndpointRecord | undefined> {
  const { rows } = await db.query<EndpointRecord>(
    `SELECT id, watchlist_id, url, events, created_at FROM endpoints
      WHERE id = $1 AND tenant_id = $2 AND watchlist_id = $3 AND deleted_at IS NULL`,
    [endpointId, tenantId, watchlistId],
  );
  return rows[0];
}

export async function selectEndpointsOf(
  db: Queryable,
  tenantId: string,
  watchlistId: string,
): Promise<EndpointRecord[]> {
  const { rows } = await db.query<EndpointRecord>(
    `SELECT id, watchlist_id, url, events, created_at FROM endpoints
      WHERE tenant_id = $1 AND watchlist_id = $2 AND deleted_at IS NULL
      ORDER BY created_at, id`,
    [tenantId, watchlistId],
  );
  return rows;
}

/** Marks every endpoint of the watchlist removed; returns how many were. */
export async function markEndpointsOfWatchlistRemoved(
  db: Queryable,
  tenantId: string,
  watchlistId: string,
  at: Date,
): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE endpoints SET deleted_at = $3
      WHERE tenant_id = $1 AND watchlist_id = $2 AND deleted_at IS NULL`,
    [tenantId, watchlistId, at],
  );
  return rowCount ?? 0;
}

export async function markEndpointRemoved(
  db: Queryable,
  endpointId: string,
  at: Date,
): Promise<void> {
  await db.query("UPDATE endpoints SET deleted_at = $2 WHERE id = $1", [endpointId, at]);
}

/**
 * The tenant's endpoints with no signing secret created after the revocation. `revoked_at` has
 * millisecond precision and secrets microsecond: a secret from the compromise's own millisecond
 * counts as from before it.
 */
export async function selectEndpointsSignedBefore(
  db: Queryable,
  tenantId: string,
  revokedAt: Date,
  now: Date,
): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT e.id FROM endpoints e
      WHERE e.tenant_id = $1 AND e.deleted_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM endpoint_secrets s
                         WHERE s.endpoint_id = e.id
                           AND date_trunc('milliseconds', s.created_at) > $2
                           AND (s.retires_at IS NULL OR s.retires_at > $3))`,
    [tenantId, revokedAt, now],
  );
  return rows.map((row) => row.id);
}

/** Holds the endpoint's row until the transaction ends, so its rotations take turns. */
export async function lockEndpoint(client: PoolClient, endpointId: string): Promise<void> {
  await client.query("SELECT id FROM endpoints WHERE id = $1 FOR UPDATE", [endpointId]);
}
