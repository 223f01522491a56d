import { randomBytes } from "node:crypto";
import type { WebhookEndpoint } from "@th/api-schemas";
import { EVENT_TYPE } from "./payload.ts";

/** An endpoint as stored. */
export interface EndpointRecord {
  id: string;
  watchlist_id: string;
  url: string;
  events: string[];
  created_at: Date;
}

/** What the owner answers, as the public operation table declares it. */
export type EndpointView = WebhookEndpoint;

export function endpointView(record: EndpointRecord): EndpointView {
  return {
    id: record.id,
    watchlist_id: record.watchlist_id,
    url: record.url,
    events: record.events,
    created_at: record.created_at.toISOString(),
  };
}

/** `we_` + 12 random bytes in base64url. */
export function newEndpointId(): string {
  return `we_${randomBytes(12).toString("base64url")}`;
}

/**
 * The events an endpoint subscribes to, each once, or null when the list is empty or names an
 * event the dispatcher does not send.
 */
export function subscribableEvents(requested: readonly string[]): string[] | null {
  const events = [...new Set(requested)];
  return events.length === 0 || events.some((event) => event !== EVENT_TYPE) ? null : events;
}

/** How many endpoints may exist at once (removed ones do not count). */
export interface EndpointLimits {
  perWatchlist: number;
  perTenant: number;
}

/**
 * Why one more endpoint may not be subscribed, or null. Each endpoint is one more stream of
 * signed requests the service sends wherever its URL points; the caps bound what one account can
 * make the service send and hold.
 */
export function endpointCapRefusal(
  existing: { tenant: number; watchlist: number },
  limits: EndpointLimits,
  watchlistId: string,
): string | null {
  if (existing.watchlist >= limits.perWatchlist) {
    return `watchlist ${watchlistId} already has ${existing.watchlist} webhook endpoints, the most allowed (${limits.perWatchlist}); remove one before subscribing another`;
  }
  if (existing.tenant >= limits.perTenant) {
    return `this account already has ${existing.tenant} webhook endpoints, the most allowed (${limits.perTenant}); remove one before subscribing another`;
  }
  return null;
}
