import { z } from "zod";

/**
 * The `watchlist.match` payload as the specification types it. Two figures the roll may not give
 * are written in their spec type, never as null: an unknown mailing state is "" and an equity
 * that cannot be estimated is 0 (see the descriptions).
 */
export const watchlistMatchEventSchema = z
  .object({
    event_id: z.string().describe("Event identifier; the same for every endpoint it reaches"),
    event_type: z.literal("watchlist.match"),
    occurred_at: z.string().describe("RFC 3339 UTC timestamp"),
    tenant_id: z.string(),
    watchlist: z.object({ id: z.string(), name: z.string() }).strict(),
    match: z
      .object({
        folio: z.string().describe("Parcel identifier"),
        address: z.string().describe("Parcel address"),
        score: z.number().describe("Fractional score in [0, 1]"),
        signals_fired: z.array(z.string()).describe("Names of the signals that fired"),
        owner: z
          .object({
            name: z.string(),
            mailing_state: z
              .string()
              .describe(
                'USPS two-letter state abbreviation of the owner\'s mailing address; "" (empty) when the roll gives no state or the address is outside the US',
              ),
          })
          .strict(),
        valuation: z
          .object({
            just_value: z.number().describe("Just (market) value, whole US dollars"),
            est_equity: z
              .number()
              .describe(
                "Estimated equity, whole US dollars; negative when the modelled loan exceeds the value. 0 when the roll records no purchase that could carry a loan, so no estimate is made: 0 never claims equity. The lead (GET /v1/leads/{folio}) tells the two apart (its est_equity is null then)",
              ),
          })
          .strict(),
        observed_at: z.string().describe("RFC 3339 UTC timestamp"),
      })
      .strict(),
  })
  .strict()
  .meta({ id: "WatchlistMatchEvent" });

export type WatchlistMatchEvent = z.infer<typeof watchlistMatchEventSchema>;
