import { watchlistMatchEventSchema } from "@th/api-schemas";
import { z } from "zod";

/**
 * The OpenAPI 3.1 `webhooks` entry of the one event v1 sends: the request a subscribed endpoint
 * receives, its headers and the payload's schema (with how unknown roll values are written).
 */
export function webhookDocument(): Record<string, unknown> {
  // The schema carries an id, so zod writes it as a reference into $defs; the body takes it whole.
  const json = z.toJSONSchema(watchlistMatchEventSchema) as {
    $defs?: Record<string, Record<string, unknown>>;
  };
  const schema = json.$defs?.WatchlistMatchEvent ?? json;
  const header = (name: string, description: string) => ({
    name,
    in: "header",
    required: true,
    description,
    schema: { type: "string" },
  });
  return {
    "watchlist.match": {
      post: {
        summary: "A freshly ingested parcel matched a watchlist's recipe",
        description:
          "Sent to every subscribed endpoint of the watchlist, one delivery per matching parcel, at least once. Verify the signature over the raw body bytes, then dedupe on X-FLPF-Webhook-Id. Answer 2xx within about 10 s; 408, 429, 5xx and network errors are retried after 1 s, 5 s, 30 s and 5 min; any other 4xx dead-letters the delivery (replayable for 30 days).",
        parameters: [
          header(
            "X-FLPF-Signature",
            "t=<unix_seconds>,v1=<hex_hmac_sha256> over `t.body`, keyed with the endpoint's one current secret; exactly one v1",
          ),
          header("X-FLPF-Event-Type", "watchlist.match"),
          header("X-FLPF-Webhook-Id", "Stable UUID per delivery, the same across retries"),
          header("User-Agent", "terminal-house-webhooks/1.0"),
        ],
        requestBody: {
          required: true,
          content: { "application/json": { schema } },
        },
        responses: {
          "200": { description: "Delivered (any 2xx)" },
        },
      },
    },
  };
}
