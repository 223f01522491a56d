import { randomUUID } from "node:crypto";
import type { LeadViewRecorded } from "@th/contracts";
import { type LeadViewMeter, type Period, type Reservation, utcDay } from "./meter.ts";

/** Who read the lead-views a charge records, as its `leadview.recorded` events name them. */
export type LeadViewReader = Pick<
  LeadViewRecorded,
  "surface" | "request_id" | "key_id" | "member_id" | "recorded_at"
>;

/** A reservation the meter granted. */
export type Granted = Extract<Reservation, { ok: true }>;

/**
 * One reader's lead-view charge, the protocol every surface that shows leads follows (the API
 * reads and the webhooks alike):
 * 1. `reserve` the folios, all or none against the period's cap. The reservation is named before
 *    the call, so when a call fails (its reply may have been lost after it charged) everything
 *    this charge asked for is given back before the error is passed on.
 * 2. Record a view for every folio `foliosToRecord` names (those it charged, and those another
 *    reader charged moments ago and may still give back), built by `view`.
 * 3. `giveBack` every folio it was to record whose view was not recorded. Of a folio it charged
 *    alone, the charge goes back; of a shared one (charged by another reader, or read by one
 *    since) it only gives up its own hold, and the folio goes back when the last holder gives it
 *    back. Only within the meter's settle window; after it the charge stands.
 * 4. Or `settle` the folios whose views the broker acknowledged: nothing can give them back now,
 *    so later reads of them that day are free at once (see `LeadViewMeter.settle`).
 */
export function openLeadViewCharge(
  meter: LeadViewMeter,
  scope: { tenantId: string; period: Period; day: string },
) {
  const reservation = randomUUID();
  const asked = new Set<string>();
  return {
    ...scope,
    reservation,

    /** Charges the folios not yet viewed today, all or none (see `LeadViewMeter.reserve`). */
    async reserve(cap: number, folios: readonly string[]): Promise<Reservation> {
      for (const folio of folios) {
        asked.add(folio);
      }
      try {
        return await meter.reserve({ ...scope, cap, folios, reservation });
      } catch (error) {
        await meter.release({ ...scope, reservation, folios: [...asked] }).catch(() => {});
        throw error;
      }
    },

    /**
     * Gives up this charge's hold on folios whose views were not recorded (all it was to record,
     * shared ones too); answers how many went back, which leaves out shared folios another
     * reader still holds (see `LeadViewMeter.release`).
     */
    giveBack(folios: readonly string[]): Promise<number> {
      return meter.release({ ...scope, reservation, folios });
    },

    /**
     * Settles the folios whose views were recorded and acknowledged. Never fails: a settlement
     * that does not reach Redis leaves the entries to the end of the window.
     */
    settle(folios: readonly string[]): Promise<void> {
      return meter.settle({ tenantId: scope.tenantId, day: scope.day, reservation, folios }).then(
        () => {},
        () => {},
      );
    },

    /** The `leadview.recorded` event of one folio this charge records. */
    view(folio: string, reader: LeadViewReader): LeadViewRecorded {
      return {
        tenant_id: scope.tenantId,
        folio,
        day: scope.day,
        billing_period_start: utcDay(scope.period.start),
        ...reader,
      };
    },
  };
}

export type LeadViewCharge = ReturnType<typeof openLeadViewCharge>;

/** The folios a granted reservation records a view for: its own charges and the unsettled ones. */
export function foliosToRecord(granted: Granted): string[] {
  return [...granted.charged, ...granted.unsettled];
}
