// The delivery log as the API reads it (deliveries and their attempts) and replay, which puts
// held deliveries back in the queue. The worker's claims live elsewhere.
import type { Pool, PoolClient } from "@th/db";
import type { AttemptRow, DeliveryRow } from "../domain/delivery-log.ts";

type Queryable = Pool | PoolClient;

/**
 * One page, newest first, after the cursor's position. The cursor keeps created_at to the
 * microsecond, as stored: deliveries of one intake share one timestamp, and a millisecond cursor
 * would skip all of them after the first page.
 */
export async function selectDeliveryPage(
  db: Queryable,
  where: {
    endpointId: string;
    tenantId: string;
    state: string | null;
    after: { at: string; id: string } | null;
  },
  limit: number,
): Promise<(DeliveryRow & { cursor_at: string })[]> {
  const { rows } = await db.query(
    `SELECT *, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
       FROM deliveries
      WHERE endpoint_id = $1 AND tenant_id = $2
        AND ($3::text IS NULL OR state = $3)
        AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5::uuid))
      ORDER BY created_at DESC, id DESC LIMIT $6`,
    [
      where.endpointId,
      where.tenantId,
      where.state,
      where.after?.at ?? null,
      where.after?.id ?? null,
      limit,
    ],
  );
  return rows;
}

export interface DeliveryKey {
  deliveryId: string;
  endpointId: string;
  tenantId: string;
}

export async function selectDelivery(
  db: Queryable,
  key: DeliveryKey,
): Promise<(DeliveryRow & { body: string; charged_at: Date | null }) | undefined> {
  const { rows } = await db.query(
    "SELECT * FROM deliveries WHERE id = $1 AND endpoint_id = $2 AND tenant_id = $3",
    [key.deliveryId, key.endpointId, key.tenantId],
  );
  return rows[0];
}

export async function selectDeliveryState(
  db: Queryable,
  key: DeliveryKey,
): Promise<{ state: string; hold_until: Date | null } | undefined> {
  const { rows } = await db.query(
    "SELECT state, hold_until FROM deliveries WHERE id = $1 AND endpoint_id = $2 AND tenant_id = $3",
    [key.deliveryId, key.endpointId, key.tenantId],
  );
  return rows[0];
}

export async function selectAttempts(db: Queryable, deliveryId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query(
    `SELECT replay_no, attempt, attempted_at, duration_ms, status_code, failure, error, state
       FROM attempts WHERE delivery_id = $1 ORDER BY replay_no, attempt`,
    [deliveryId],
  );
  return rows;
}

/**
 * Held deliveries matching `where` (whose parameters start at $2) go back to pending with the
 * next replay number and the retry schedule from the start; returns them as updated.
 */
async function replayWhere(
  client: PoolClient,
  now: Date,
  where: string,
  params: unknown[],
): Promise<DeliveryRow[]> {
  const { rows } = await client.query(
    `UPDATE deliveries SET state = 'pending', replay_no = replay_no + 1, attempts = 0,
            due_at = $1, lease_token = NULL, lease_until = NULL, parked_reason = NULL,
            completed_at = NULL, dead_lettered_at = NULL, dead_letter_reason = NULL,
            hold_until = NULL
      WHERE state IN ('dead_letter', 'complete') AND hold_until > $1 AND ${where}
      RETURNING *`,
    [now, ...params],
  );
  return rows;
}

/** The one delivery, when it is dead-lettered or complete and still held. */
export async function replayDelivery(
  client: PoolClient,
  key: DeliveryKey,
  now: Date,
): Promise<DeliveryRow | undefined> {
  const rows = await replayWhere(client, now, "id = $2 AND endpoint_id = $3 AND tenant_id = $4", [
    key.deliveryId,
    key.endpointId,
    key.tenantId,
  ]);
  return rows[0];
}

/** The endpoint's held dead letters dead-lettered in [since, until). */
export async function replayDeadLetters(
  client: PoolClient,
  endpoint: { endpointId: string; tenantId: string },
  window: { since: Date; until: Date | null },
  now: Date,
): Promise<DeliveryRow[]> {
  return replayWhere(
    client,
    now,
    `endpoint_id = $2 AND tenant_id = $3 AND state = 'dead_letter'
     AND dead_lettered_at >= $4 AND ($5::timestamptz IS NULL OR dead_lettered_at < $5)`,
    [endpoint.endpointId, endpoint.tenantId, window.since, window.until],
  );
}
