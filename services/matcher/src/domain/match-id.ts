// A match's identity is everything that makes it the same match: the watchlist, the recipe
// version that judged it, the parcel, and the parcel content judged. A redelivered or replayed
// `parcel.ingested` therefore yields the same id, and the matcher's unique key on it turns the
// second insert into a no-op instead of a second webhook and a second lead-view.
import { createHash } from "node:crypto";

// Bumped only if the id derivation ever changes; part of the hashed input so old and new ids
// can never collide.
const MATCH_ID_DOMAIN = "th.match.v1";

/**
 * A name-based UUID (RFC 9562 version 8, the SHA-256 variant of what version 5 does with SHA-1):
 * the first 128 bits of SHA-256 over the JSON array of the inputs (JSON keeps the fields apart,
 * so no choice of folio can shift bytes into the content hash), with the version and variant
 * bits set.
 */
export function matchId(
  watchlistId: string,
  recipeVersion: number,
  folio: string,
  parcelContentHash: string,
): string {
  const digest = createHash("sha256")
    .update(JSON.stringify([MATCH_ID_DOMAIN, watchlistId, recipeVersion, folio, parcelContentHash]))
    .digest();
  const bytes = digest.subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
