import type { PoolClient } from "./pool.ts";

/**
 * Claims an event for a consumer inside the caller's transaction. Returns false when the event
 * was already applied, so a redelivered record (at-least-once) is skipped; because the claim
 * commits or rolls back with the effect, a crash between the two cannot lose or double it.
 * Expects the service schema's `processed_events` table.
 */
export async function claimEvent(
  client: PoolClient,
  consumer: string,
  eventId: string,
): Promise<boolean> {
  const result = await client.query(
    "INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    [consumer, eventId],
  );
  return result.rowCount === 1;
}
