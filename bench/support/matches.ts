// Fresh match.found records for the webhook benches, spread over tenants in turn.
import { randomUUID } from "node:crypto";
import type { MatchFound } from "@th/contracts";
import { matchFound as sample } from "@th/contracts/samples";

export function benchMatches(
  count: number,
  tenants: readonly string[],
  watchlist: { id: string; name: string },
): MatchFound[] {
  return Array.from({ length: count }, (_, i) => {
    const id = `m_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
    return {
      ...sample,
      match_id: id,
      tenant_id: tenants[i % tenants.length] as string,
      watchlist,
      match: { ...sample.match, folio: `23-${id}` },
      occurred_at: new Date().toISOString(),
    };
  });
}
