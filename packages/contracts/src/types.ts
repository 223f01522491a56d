// The contracts' TypeScript types are generated from the .avsc schemas
// (`generated/avro-types.ts`, by `avro-typescript.ts`); `avro-types.test.ts` fails when a schema
// changes and they are not regenerated, and `types.test.ts` proves samples of each against its
// schema. What the schemas cannot say lives here.

/** A watchlist as a match names it (the schema's nested `Watchlist` record). */
export type { Watchlist as WatchlistRef } from "./generated/avro-types.ts";
export * from "./generated/avro-types.ts";

/** RFC 3339 UTC instant, `YYYY-MM-DDTHH:mm:ss.sssZ`: how every `*_at` field is written. */
export type Instant = string;
/** UTC calendar day, `YYYY-MM-DD`. */
export type UtcDay = string;
