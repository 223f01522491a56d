import { type Bus, PublishTimeoutError } from "@th/bus";
import { contracts, type LeadViewRecorded, type LeadViewVoided, type Surface } from "@th/contracts";
import { foliosToRecord, type LeadViewMeter, openLeadViewCharge, utcDay } from "@th/quota";
import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { quotaUpgradeUrlFor, tenancyOf } from "./authenticate.ts";
import { suspendedReads } from "./suspension.ts";

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
 * Charges lead-views for the parcels a response is about to show, by the lead-view charge every
 * surface follows (`openLeadViewCharge`). The reservation is one atomic Redis script (all or
 * nothing against the month's remaining views); the views are then recorded on Kafka with acks
 * from every replica before the response leaves, in a produce request the reads of the same
 * moment share (`publishLingerMs`), and once acknowledged the charges are settled. If they
 * cannot be recorded within `publishTimeoutMs`, or the client has gone before they are, the
 * reservation is given back, the read is voided (decision 0190), nothing of it is sent that had
 * not left yet, and the client gets 503: never a free read, never a charged read that was not
 * answered (docs/operations.md, "When a lead-view is charged"). A folio another request charged
 * moments ago and may still give back is recorded by this read too (the ledger keeps one view
 * per tenant, folio and day), so it is not free should the other one fail; should this read fail
 * as well, it gives up its hold on it, and the folio goes back once no read holds it.
 */
export function createMetering(deps: {
  meter: LeadViewMeter;
  bus: Bus;
  upgradeUrl: string;
  /** How long the broker has to acknowledge a read's lead-views (2 s unless set). */
  publishTimeoutMs?: number;
  /**
   * How long a read's lead-views may wait, while the previous produce request is unanswered, for
   * other reads' to share the next (see `LingeringPublisher`); 0 (unless set) shares only with
   * the reads answered in the same turn of the event loop.
   */
  publishLingerMs?: number;
  /** Counts lead-views recorded, by surface. */
  onRecorded?: (surface: Surface, count: number) => void;
  /**
   * Takes the void of a read whose views were not acknowledged in time: a produce request that
   * reached the broker may still be appended, and the void keeps the ledger from charging it.
   */
  voids?: { void(event: LeadViewVoided): void };
}) {
  const recorder = deps.bus.lingering(contracts.leadViewRecorded, {
    lingerMs: deps.publishLingerMs ?? 0,
  });
  const publishTimeoutMs = deps.publishTimeoutMs ?? 2_000;
  return {
    async charge(
      request: FastifyRequest,
      folios: readonly string[],
      surface: Surface,
    ): Promise<void> {
      refuseHeadOnMeteredRead(request);
      const tenancy = tenancyOf(request);
      // Every surface's paid read comes here, MCP's tools included: a suspended tenant reads nothing.
      if (tenancy.suspended) {
        throw suspendedReads();
      }
      const quota = request.edge?.quota;
      if (!quota) {
        throw new ApiError("unauthorized", "authentication required");
      }
      if (folios.length === 0) {
        return;
      }
      // As of admission: the day and the period the quota figures describe are one pair.
      const at = new Date(quota.admittedAt);
      const day = utcDay(at);
      const period = { start: quota.periodStart, end: quota.resetsAt };
      // Named before the call, so that a reservation whose reply was lost is given back too.
      const charge = openLeadViewCharge(deps.meter, { tenantId: tenancy.tenantId, period, day });
      const reservation = await charge.reserve(quota.limit, folios).catch((error: unknown) => {
        request.log.error({ err: error }, "lead-views could not be reserved");
        throw new ApiError(
          "unavailable",
          "the read could not be metered; nothing was charged, try again shortly",
        );
      });
      if (!reservation.ok) {
        quota.remaining = reservation.remaining;
        throw new ApiError(
          "quota_exceeded",
          `this read needs ${reservation.needed} lead-view(s) and ${reservation.remaining} remain this month; the quota resets at ${quota.resetsAt.toISOString()}`,
          {
            quota_resets_at: quota.resetsAt.toISOString(),
            upgrade_url: quotaUpgradeUrlFor(deps.upgradeUrl, tenancy.tier),
          },
        );
      }
      quota.remaining = reservation.remaining;
      const recorded = foliosToRecord(reservation);
      if (recorded.length === 0) {
        return;
      }
      const events: LeadViewRecorded[] = recorded.map((folio) =>
        charge.view(folio, {
          // A dashboard session's reads are the web surface and carry no key.
          surface: tenancy.sessionId && surface === "rest" ? "web" : surface,
          request_id: request.id,
          key_id: tenancy.sessionId ? null : tenancy.keyId,
          member_id: tenancy.memberId,
          recorded_at: at.toISOString(),
        }),
      );
      const gone = clientGone(request);
      try {
        await recorder.publish(events, { signal: gone.signal, timeoutMs: publishTimeoutMs });
        deps.onRecorded?.(surface, reservation.charged.length);
        // Acknowledged: nothing can give these views back now, so later reads of them are free.
        void charge.settle(recorded);
      } catch (error) {
        deps.voids?.void({
          tenant_id: tenancy.tenantId,
          request_id: request.id,
          day,
          folios: recorded,
          reason: gone.signal.aborted
            ? "client_gone"
            : error instanceof PublishTimeoutError
              ? "publish_timeout"
              : "publish_failed",
          voided_at: new Date().toISOString(),
        });
        // Every folio it was to record, the shared ones too: it gives up its hold on those, and
        // one goes back when no reader holds it any more. `released` counts what went back.
        const released = await charge.giveBack(recorded).catch((releaseError: unknown) => {
          // Kept charged: the tenant loses these views until the counters are rebuilt from
          // the ledger, which is the safe side of a failure.
          request.log.error({ err: releaseError }, "lead-views could not be given back");
          return 0;
        });
        quota.remaining += released;
        request.log.error(
          {
            err: error,
            released,
            charged: reservation.charged.length,
            client_gone: gone.signal.aborted,
          },
          "lead-views could not be recorded; reservation released",
        );
        throw new ApiError(
          "unavailable",
          "the read could not be recorded; nothing was charged, try again shortly",
        );
      } finally {
        gone.dispose();
      }
    },
  };
}

export type Metering = ReturnType<typeof createMetering>;

/**
 * Fires when the client's connection closes before its answer was sent: its lead-views must not
 * be recorded then, as no body will reach it.
 */
function clientGone(request: FastifyRequest): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const socket = request.raw.socket;
  if (!socket || socket.destroyed) {
    controller.abort();
    return { signal: controller.signal, dispose: () => {} };
  }
  const onClose = () => controller.abort();
  socket.once("close", onClose);
  return {
    signal: controller.signal,
    dispose: () => socket.off("close", onClose),
  };
}
