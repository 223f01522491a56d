import type { Situs } from "./types.ts";

/**
 * A parcel's situs on one line, as a lead and a match (so a webhook) show it: "1388 NW 7TH ST,
 * MIAMI 33125", leaving out what the roll left empty.
 */
export function formatAddress(situs: Situs): string {
  const place = [situs.city, situs.zip].filter(Boolean).join(" ");
  return [situs.address, place].filter(Boolean).join(", ");
}
