import { randomBytes } from "node:crypto";
import type { WebhookAttempt, WebhookDelivery, WebhookEndpoint } from "@th/api-schemas";
import { type Pool, type PoolClient, inTransaction as runInTransaction } from "@th/db";
import { ApiError, type InternalCaller, isUtcInstant } from "@th/service-kit";
import type { WatchlistDirectory } from "../clients/internal.ts";
import type { SecretStore } from "../delivery/secret-store.ts";
import { refuseEndpointUrl } from "../delivery/sender.ts";
import type { AddressPolicy } from "./address.ts";
import { EVENT_TYPE } from "./payload.ts";

// The public shapes of what the owner answers, from the operation table.
export type EndpointView = WebhookEndpoint;
export type DeliveryView = WebhookDelivery;
export type AttemptView = WebhookAttempt;

const iso = (value: Date | null | undefined) => (value ? value.toISOString() : null);

// biome-ignore lint/suspicious/noExplicitAny: rows straight from pg
function deliveryView(row: any): DeliveryView {
  const waiting = ["pending", "retrying", "parked", "exhausted"].includes(row.state);
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    watchlist_id: row.watchlist_id,
    match_id: row.match_id,
    folio: row.folio,
    event_type: row.event_type,
    state: row.state,
    parked_reason: row.parked_reason,
    attempts: row.attempts,
    replay_no: row.replay_no,
    next_attempt_at: waiting && row.state !== "exhausted" ? iso(row.due_at) : null,
    first_attempted_at: iso(row.first_attempted_at),
    last_attempted_at: iso(row.last_attempted_at),
    last_status_code: row.last_status_code,
    last_failure: row.last_failure,
    last_error: row.last_error,
    completed_at: iso(row.completed_at),
    dead_lettered_at: row.state === "exhausted" ? iso(row.due_at) : iso(row.dead_lettered_at),
    dead_letter_reason: row.dead_letter_reason,
    hold_until: iso(row.hold_until),
    created_at: iso(row.created_at) as string,
  };
}

/** Endpoints, their secrets, the delivery log and replay, always within one tenant. */
/** The position a delivery-log cursor holds, or null when it is not one this API issued. */
function deliveryCursorOf(cursor: string): { at: string; id: string } | null {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    const { at, id } = (parsed ?? {}) as { at?: unknown; id?: unknown };
    return typeof at === "string" &&
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(at) &&
      isUtcInstant(at) &&
      typeof id === "string" &&
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)
      ? { at, id }
      : null;
  } catch {
    return null;
  }
}

export function createEndpointService(deps: {
  pool: Pool;
  secrets: SecretStore;
  watchlists: WatchlistDirectory;
  policy: AddressPolicy;
  now: () => number;
  wake: () => void;
}) {
  const { pool } = deps;

  const inTransaction = <T>(work: (client: PoolClient) => Promise<T>) =>
    runInTransaction(pool, work);

  /**
   * The caller's watchlist exists: endpoints are reached through their watchlist, so a deleted
   * watchlist's endpoints are not found (and cannot be rotated or listed) with it.
   */
  async function requireWatchlist(caller: InternalCaller, watchlistId: string): Promise<void> {
    if (!(await deps.watchlists.owns(caller, watchlistId))) {
      throw new ApiError("not_found", `no watchlist ${watchlistId}`);
    }
  }

  async function endpointOf(tenantId: string, watchlistId: string, endpointId: string) {
    const { rows } = await pool.query<{
      id: string;
      watchlist_id: string;
      url: string;
      events: string[];
      created_at: Date;
    }>(
      `SELECT id, watchlist_id, url, events, created_at FROM endpoints
        WHERE id = $1 AND tenant_id = $2 AND watchlist_id = $3 AND deleted_at IS NULL`,
      [endpointId, tenantId, watchlistId],
    );
    const row = rows[0];
    if (!row) {
      throw new ApiError(
        "not_found",
        `no webhook endpoint ${endpointId} on watchlist ${watchlistId}`,
      );
    }
    return {
      id: row.id,
      watchlist_id: row.watchlist_id,
      url: row.url,
      events: row.events,
      created_at: row.created_at.toISOString(),
    };
  }

  async function replayable(client: PoolClient, where: string, params: unknown[]) {
    return client.query(
      `UPDATE deliveries SET state = 'pending', replay_no = replay_no + 1, attempts = 0,
              due_at = $1, lease_token = NULL, lease_until = NULL, parked_reason = NULL,
              completed_at = NULL, dead_lettered_at = NULL, dead_letter_reason = NULL,
              hold_until = NULL
        WHERE state IN ('dead_letter', 'complete') AND hold_until > $1 AND ${where}
        RETURNING *`,
      [new Date(deps.now()), ...params],
    );
  }

  return {
    async create(
      caller: InternalCaller,
      watchlistId: string,
      input: { url: string; events: string[] },
    ): Promise<EndpointView & { secret: string }> {
      const events = [...new Set(input.events)];
      if (events.length === 0 || events.some((event) => event !== EVENT_TYPE)) {
        throw new ApiError("invalid_request", `events accepts only ${EVENT_TYPE}`, {
          fields: [{ path: "events", message: `only ${EVENT_TYPE} is allowed` }],
        });
      }
      const refusal = await refuseEndpointUrl(input.url, deps.policy);
      if (refusal) {
        throw new ApiError("invalid_request", refusal, {
          fields: [{ path: "url", message: refusal }],
        });
      }
      await requireWatchlist(caller, watchlistId);
      const tenantId = caller.tenantId;
      const id = `we_${randomBytes(12).toString("base64url")}`;
      return inTransaction(async (client) => {
        const { rows } = await client.query<{ created_at: Date }>(
          `INSERT INTO endpoints (id, tenant_id, watchlist_id, url, events)
           VALUES ($1, $2, $3, $4, $5) RETURNING created_at`,
          [id, tenantId, watchlistId, input.url, events],
        );
        const secret = await deps.secrets.create(client, id);
        return {
          id,
          watchlist_id: watchlistId,
          url: input.url,
          events,
          created_at: (rows[0]?.created_at ?? new Date(deps.now())).toISOString(),
          secret,
        };
      });
    },

    async list(tenantId: string, watchlistId: string): Promise<EndpointView[]> {
      const { rows } = await pool.query(
        `SELECT id, watchlist_id, url, events, created_at FROM endpoints
          WHERE tenant_id = $1 AND watchlist_id = $2 AND deleted_at IS NULL
          ORDER BY created_at, id`,
        [tenantId, watchlistId],
      );
      return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
    },

    get: endpointOf,

    requireWatchlist,

    /**
     * Every endpoint of a deleted watchlist: their queued deliveries are dead letters
     * (`endpoint_removed`) from the next claim on. Returns how many went.
     */
    async removeAllOf(tenantId: string, watchlistId: string): Promise<number> {
      const { rowCount } = await pool.query(
        `UPDATE endpoints SET deleted_at = $3
          WHERE tenant_id = $1 AND watchlist_id = $2 AND deleted_at IS NULL`,
        [tenantId, watchlistId, new Date(deps.now())],
      );
      return rowCount ?? 0;
    },

    async remove(tenantId: string, watchlistId: string, endpointId: string): Promise<void> {
      await endpointOf(tenantId, watchlistId, endpointId);
      await pool.query("UPDATE endpoints SET deleted_at = $2 WHERE id = $1", [
        endpointId,
        new Date(deps.now()),
      ]);
    },

    async rotate(tenantId: string, watchlistId: string, endpointId: string) {
      const endpoint = await endpointOf(tenantId, watchlistId, endpointId);
      const rotated = await inTransaction((client) => deps.secrets.rotate(client, endpointId));
      // A read between the rotation and its commit still saw the old secrets; drop what it kept.
      deps.secrets.forget(endpointId);
      return {
        ...endpoint,
        secret: rotated.secret,
        previous_secret_expires_at: rotated.previousRetiresAt.toISOString(),
      };
    },

    /**
     * Every endpoint of the tenant gets a new secret and the old ones stop signing at once.
     * Idempotent: an endpoint whose signing secret is younger than the revocation is skipped, so
     * the several `key.revoked` events of one compromise (and their redeliveries) rotate once.
     * `revoked_at` has millisecond precision and secrets microsecond: a secret from the
     * compromise's own millisecond counts as from before it, so it is rotated rather than trusted.
     */
    async rotateAfterCompromise(tenantId: string, revokedAt: Date): Promise<number> {
      const { rows } = await pool.query<{ id: string }>(
        `SELECT e.id FROM endpoints e
          WHERE e.tenant_id = $1 AND e.deleted_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM endpoint_secrets s
                             WHERE s.endpoint_id = e.id
                               AND date_trunc('milliseconds', s.created_at) > $2
                               AND (s.retires_at IS NULL OR s.retires_at > $3))`,
        [tenantId, revokedAt, new Date(deps.now())],
      );
      for (const row of rows) {
        await inTransaction(async (client) => {
          await client.query("SELECT id FROM endpoints WHERE id = $1 FOR UPDATE", [row.id]);
          const again = await client.query(
            `SELECT 1 FROM endpoint_secrets WHERE endpoint_id = $1
               AND date_trunc('milliseconds', created_at) > $2 AND retires_at IS NULL`,
            [row.id, revokedAt],
          );
          if ((again.rowCount ?? 0) === 0) {
            await deps.secrets.rotate(client, row.id);
          }
        });
        // A read between the rotation and its commit still saw the compromised secret.
        deps.secrets.forget(row.id);
      }
      return rows.length;
    },

    async deliveries(
      tenantId: string,
      watchlistId: string,
      endpointId: string,
      query: { state?: string | undefined; limit: number; cursor?: string | undefined },
    ): Promise<{ data: DeliveryView[]; next_cursor: string | null }> {
      await endpointOf(tenantId, watchlistId, endpointId);
      let after: { at: string; id: string } | null = null;
      if (query.cursor) {
        after = deliveryCursorOf(query.cursor);
        if (!after) {
          throw new ApiError("invalid_request", "cursor is not one this API issued", {
            fields: [{ path: "querystring.cursor", message: "is not a cursor this API issued" }],
          });
        }
      }
      // The cursor keeps created_at to the microsecond, as stored: deliveries of one intake
      // share one timestamp, and a millisecond cursor would skip all of them after the first page.
      const { rows } = await pool.query(
        `SELECT *, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at
           FROM deliveries
          WHERE endpoint_id = $1 AND tenant_id = $2
            AND ($3::text IS NULL OR state = $3)
            AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5::uuid))
          ORDER BY created_at DESC, id DESC LIMIT $6`,
        [
          endpointId,
          tenantId,
          query.state ?? null,
          after?.at ?? null,
          after?.id ?? null,
          query.limit + 1,
        ],
      );
      const page = rows.slice(0, query.limit);
      const last = page[page.length - 1];
      return {
        data: page.map(deliveryView),
        next_cursor:
          rows.length > query.limit && last
            ? Buffer.from(JSON.stringify({ at: last.cursor_at, id: last.id })).toString("base64url")
            : null,
      };
    },

    async delivery(tenantId: string, watchlistId: string, endpointId: string, deliveryId: string) {
      await endpointOf(tenantId, watchlistId, endpointId);
      if (!/^[0-9a-f-]{36}$/i.test(deliveryId)) {
        throw new ApiError("not_found", `no delivery ${deliveryId}`);
      }
      const { rows } = await pool.query(
        "SELECT * FROM deliveries WHERE id = $1 AND endpoint_id = $2 AND tenant_id = $3",
        [deliveryId, endpointId, tenantId],
      );
      if (!rows[0]) {
        throw new ApiError("not_found", `no delivery ${deliveryId}`);
      }
      const attempts = await pool.query(
        `SELECT replay_no, attempt, attempted_at, duration_ms, status_code, failure, error,
                response_excerpt, state
           FROM attempts WHERE delivery_id = $1 ORDER BY replay_no, attempt`,
        [deliveryId],
      );
      return {
        ...deliveryView(rows[0]),
        body: rows[0].body as string,
        attempts: attempts.rows.map(
          (row): AttemptView => ({ ...row, attempted_at: row.attempted_at.toISOString() }),
        ),
      };
    },

    /**
     * A new attempt of a dead-lettered (or completed) delivery within its 30-day hold: same
     * webhook id, same body, the next replay number, the retry schedule from the start.
     */
    async replay(tenantId: string, watchlistId: string, endpointId: string, deliveryId: string) {
      await endpointOf(tenantId, watchlistId, endpointId);
      if (!/^[0-9a-f-]{36}$/i.test(deliveryId)) {
        throw new ApiError("not_found", `no delivery ${deliveryId}`);
      }
      const result = await inTransaction((client) =>
        replayable(client, "id = $2 AND endpoint_id = $3 AND tenant_id = $4", [
          deliveryId,
          endpointId,
          tenantId,
        ]),
      );
      if (!result.rows[0]) {
        const exists = await pool.query(
          "SELECT state, hold_until FROM deliveries WHERE id = $1 AND endpoint_id = $2 AND tenant_id = $3",
          [deliveryId, endpointId, tenantId],
        );
        if (!exists.rows[0]) {
          throw new ApiError("not_found", `no delivery ${deliveryId}`);
        }
        throw new ApiError(
          "conflict",
          `delivery ${deliveryId} is ${exists.rows[0].state}; only dead-lettered or completed deliveries within their 30-day hold can be replayed`,
        );
      }
      deps.wake();
      return deliveryView(result.rows[0]);
    },

    /** Replays the endpoint's dead letters dead-lettered in [since, until). */
    async replayDeadLetters(
      tenantId: string,
      watchlistId: string,
      endpointId: string,
      range: { since: string; until?: string | undefined },
    ): Promise<{ replayed: number; delivery_ids: string[] }> {
      await endpointOf(tenantId, watchlistId, endpointId);
      const result = await inTransaction((client) =>
        replayable(
          client,
          `endpoint_id = $2 AND tenant_id = $3 AND state = 'dead_letter'
           AND dead_lettered_at >= $4 AND ($5::timestamptz IS NULL OR dead_lettered_at < $5)`,
          [endpointId, tenantId, new Date(range.since), range.until ? new Date(range.until) : null],
        ),
      );
      if ((result.rowCount ?? 0) > 0) {
        deps.wake();
      }
      return {
        replayed: result.rowCount ?? 0,
        delivery_ids: result.rows.map((row) => row.id as string),
      };
    },
  };
}

export type EndpointService = ReturnType<typeof createEndpointService>;
