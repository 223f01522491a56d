// The cursor entry point alone: the package's index brings its HTTP and database clients.
import type { WebhookAttempt, WebhookDelivery } from "@th/api-schemas";
import { isUtcInstant } from "@th/service-kit/cursor";

/** A delivery as stored (the columns its views read). */
export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  watchlist_id: string;
  match_id: string;
  folio: string;
  event_type: string;
  /** The delivery states the table declares; the column holds no others. */
  state: WebhookDelivery["state"];
  parked_reason: string | null;
  attempts: number;
  replay_no: number;
  due_at: Date | null;
  first_attempted_at: Date | null;
  last_attempted_at: Date | null;
  last_status_code: number | null;
  last_failure: string | null;
  last_error: string | null;
  completed_at: Date | null;
  dead_lettered_at: Date | null;
  dead_letter_reason: string | null;
  hold_until: Date | null;
  created_at: Date;
  /** When a delivery of it reached the receiver and its lead-view was charged; null until then. */
  charged_at?: Date | null;
}

/** What the owner answers, as the public operation table declares it. */
export type DeliveryView = WebhookDelivery;

/** An attempt as stored. */
export interface AttemptRow {
  replay_no: number;
  attempt: number;
  attempted_at: Date;
  duration_ms: number | null;
  status_code: number | null;
  failure: string | null;
  error: string | null;
  state: string;
}

export type AttemptView = WebhookAttempt;

const iso = (value: Date | null | undefined) => (value ? value.toISOString() : null);

/**
 * A waiting delivery's due time is its next attempt, except an exhausted one's: its retries are
 * spent, so that time is when it is dead-lettered.
 */
export function deliveryView(row: DeliveryRow): DeliveryView {
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

export function attemptView(row: AttemptRow): AttemptView {
  return { ...row, attempted_at: row.attempted_at.toISOString() };
}

/**
 * The payload a delivery's log may show: a charged delivery's is a copy of a lead the tenant paid
 * for; any other's (parked for quota, dead-lettered, still waiting) would be lead data for
 * nothing, so it is withheld and shown only as a metered read (`…/body`).
 */
export function paidBody(row: Pick<DeliveryRow, "charged_at"> & { body: string }): string | null {
  return row.charged_at ? row.body : null;
}

/** Delivery ids are UUIDs; anything else names no delivery (and never reaches the database). */
export function isDeliveryId(id: string): boolean {
  return /^[0-9a-f-]{36}$/i.test(id);
}

export interface DeliveryCursor {
  /** created_at in UTC to the microsecond, as stored. */
  at: string;
  id: string;
}

/** The position a delivery-log cursor holds, or null when it is not one this API issued. */
export function deliveryCursorOf(cursor: string): DeliveryCursor | null {
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

export function encodeDeliveryCursor(position: DeliveryCursor): string {
  return Buffer.from(JSON.stringify(position)).toString("base64url");
}

/**
 * A page from rows read one past the limit: the extra row only says that another page follows,
 * which starts after the page's last row.
 */
export function deliveryPage(
  rows: readonly (DeliveryRow & { cursor_at: string })[],
  limit: number,
): { data: DeliveryView[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(deliveryView),
    next_cursor:
      rows.length > limit && last
        ? encodeDeliveryCursor({ at: last.cursor_at, id: last.id })
        : null,
  };
}
