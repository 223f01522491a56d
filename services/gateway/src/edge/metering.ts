import type { Bus } from "@th/bus";
import { contracts, type LeadViewRecorded, type Surface } from "@th/contracts";
import { type LeadViewMeter, utcDay } from "@th/quota";
import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { tenancyOf, upgradeUrlFor } from "./authenticate.ts";

/**
 * A HEAD answer carries no lead, so it must not cost one; Fastify answers HEAD for every GET by
 * running it. Metered reads call this before they do anything.
 */
export function refuseHeadOnMeteredRead(request: FastifyRequest): void {
  if (request.method === "HEAD") {
    throw new ApiError(
      "method_not_allowed",
      "HEAD is not offered where a read costs lead-views; send GET",
      {},
      { allow: "GET" },
    );
  }
}

/**
 * Charges lead-views for the parcels a response is about to show. The reservation is one atomic
 * Redis script (all or nothing against the month's remaining views); the views are then recorded
 * on Kafka with acks from every replica before the response leaves. If they cannot be recorded,
 * the reservation is given back and the client gets 503: never a free read.
 */
export function createMetering(deps: {
  meter: LeadViewMeter;
  bus: Bus;
  upgradeUrl: string;
  now: () => number;
  /** Counts lead-views recorded, by surface. */
  onRecorded?: (surface: Surface, count: number) => void;
}) {
  return {
    async charge(
      request: FastifyRequest,
      folios: readonly string[],
      surface: Surface,
    ): Promise<void> {
      refuseHeadOnMeteredRead(request);
      const tenancy = tenancyOf(request);
      const quota = request.edge?.quota;
      if (!quota) {
        throw new ApiError("unauthorized", "authentication required");
      }
      if (folios.length === 0) {
        return;
      }
      const at = new Date(deps.now());
      const day = utcDay(at);
      const period = { start: quota.periodStart, end: quota.resetsAt };
      const reservation = await deps.meter.reserve({
        tenantId: tenancy.tenantId,
        cap: quota.limit,
        period,
        day,
        folios,
      });
      if (!reservation.ok) {
        quota.remaining = reservation.remaining;
        throw new ApiError(
          "quota_exceeded",
          `this read needs ${reservation.needed} lead-view(s) and ${reservation.remaining} remain this month; the quota resets at ${quota.resetsAt.toISOString()}`,
          {
            quota_resets_at: quota.resetsAt.toISOString(),
            upgrade_url: upgradeUrlFor(deps.upgradeUrl, tenancy.tier, "rest"),
          },
        );
      }
      quota.remaining = reservation.remaining;
      if (reservation.charged.length === 0) {
        return;
      }
      const events: LeadViewRecorded[] = reservation.charged.map((folio) => ({
        tenant_id: tenancy.tenantId,
        folio,
        day,
        billing_period_start: utcDay(period.start),
        // A dashboard session's reads are the web surface and carry no key.
        surface: tenancy.sessionId && surface === "rest" ? "web" : surface,
        request_id: request.id,
        key_id: tenancy.sessionId ? null : tenancy.keyId,
        member_id: tenancy.memberId,
        recorded_at: at.toISOString(),
      }));
      try {
        await deps.bus.publish(contracts.leadViewRecorded, events);
        deps.onRecorded?.(surface, events.length);
      } catch (error) {
        await deps.meter.release({
          tenantId: tenancy.tenantId,
          period,
          day,
          folios: reservation.charged,
        });
        quota.remaining += reservation.charged.length;
        request.log.error({ err: error }, "lead-views could not be recorded; reservation released");
        throw new ApiError(
          "unavailable",
          "the read could not be recorded; nothing was charged, try again shortly",
        );
      }
    },
  };
}

export type Metering = ReturnType<typeof createMetering>;
