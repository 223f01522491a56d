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
