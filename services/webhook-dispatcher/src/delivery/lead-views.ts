import { billingPeriodAt } from "@th/billing";
import type { LeadViewRecorded } from "@th/contracts";
import {
  foliosToRecord,
  type LeadViewCharge,
  type LeadViewMeter,
  openLeadViewCharge,
  utcDay,
} from "@th/quota";
import type { Logger } from "@th/telemetry";
import type { ClaimedRow } from "../db/deliveries.ts";

/** One tenant's lead-view charge for the rows of a claim. */
interface Reserved {
  charge: LeadViewCharge;
  covered: ClaimedRow[];
  refused: ClaimedRow[];
  /** Folios whose views this claim records: charged by it, or still unsettled elsewhere. */
  folios: string[];
  /** Attempts not over yet, by folio. */
  open: Map<string, number>;
  /** Folios an attempt delivered: never given back. */
  kept: Set<string>;
}

/**
 * The webhooks' lead-views, charged by the same protocol as reads (`openLeadViewCharge`): one
 * view per (tenant, folio, UTC day), reserved before any body leaves so a tenant over its quota
 * does not receive the lead (its rows are parked until the reset). Nothing is charged by the
 * reservation alone: a view is recorded with the attempt that delivers it (its event written in
 * the attempt's record), and given back when no attempt of its folio in this round delivered.
 */
export function createWebhookViews(options: {
  meter: LeadViewMeter;
  logger: Logger;
  now: () => number;
  /** Parks rows with their reason, each due again at its own time. */
  parkEach: (rows: readonly ClaimedRow[], reason: string, until: readonly Date[]) => Promise<void>;
}) {
  /** The reservation a claimed row's attempt carries, and whether it records the folio's view. */
  const holds = new WeakMap<ClaimedRow, { reserved: Reserved; view: boolean }>();
  const queueGiveBack = createGiveBacks(options.logger);

  return {
    /**
     * Reserves the lead-views of the rows not charged yet; parks the rows their tenant's quota
     * cannot cover until its reset. Answers the rows that may be sent.
     */
    async reserve(rows: ClaimedRow[]): Promise<ClaimedRow[]> {
      const uncharged = new Map<string, ClaimedRow[]>();
      for (const row of rows) {
        if (!row.charged_at) {
          const list = uncharged.get(row.tenant_id) ?? [];
          list.push(row);
          uncharged.set(row.tenant_id, list);
        }
      }
      if (uncharged.size === 0) {
        return rows;
      }
      const at = new Date(options.now());
      const settled = await Promise.allSettled(
        [...uncharged.values()].map((tenantRows) => reserveTenant(options.meter, tenantRows, at)),
      );
      const reservations = settled.flatMap((result) =>
        result.status === "fulfilled" ? [result.value] : [],
      );
      const giveBackAll = () =>
        Promise.all(
          reservations.map((reserved) => reserved.charge.giveBack(reserved.folios)),
        ).catch(() => {});
      const failed = settled.find((result) => result.status === "rejected");
      if (failed) {
        // Another tenant's reservation failed: every view reserved here goes back, none sent.
        await giveBackAll();
        throw failed.reason;
      }
      try {
        await options.parkEach(
          reservations.flatMap((reserved) => reserved.refused),
          "quota_exhausted",
          reservations.flatMap((reserved) =>
            reserved.refused.map(() => reserved.charge.period.end),
          ),
        );
      } catch (error) {
        await giveBackAll();
        throw error;
      }
      const covered = new Set<ClaimedRow>();
      for (const reserved of reservations) {
        const toRecord = new Set(reserved.folios);
        for (const row of reserved.covered) {
          holds.set(row, { reserved, view: toRecord.has(row.folio) });
          reserved.open.set(row.folio, (reserved.open.get(row.folio) ?? 0) + 1);
          covered.add(row);
        }
      }
      return rows.filter((row) => row.charged_at || covered.has(row));
    },

    /** Whether the row's attempt carries a reservation (a delivery it charges). */
    carries(row: ClaimedRow): boolean {
      return holds.has(row);
    },

    /** The `leadview.recorded` a delivered attempt writes with its record, if it carries one. */
    viewOf(row: ClaimedRow, at: Date): LeadViewRecorded | undefined {
      const hold = holds.get(row);
      if (!hold?.view) {
        return undefined;
      }
      return hold.reserved.charge.view(row.folio, {
        surface: "webhook",
        request_id: row.id,
        key_id: null,
        member_id: null,
        recorded_at: at.toISOString(),
      });
    },

    /**
     * A row's attempt is over. A folio's reservation is given back once every attempt of the
     * round that carried it is over and none delivered it; a delivered one keeps it (its view was
     * written with the attempt, or, when that write's outcome is unknown, will be by the
     * redelivery).
     */
    settle(row: ClaimedRow, delivered: boolean) {
      const hold = holds.get(row);
      if (!hold) {
        return;
      }
      holds.delete(row);
      const { reserved } = hold;
      if (delivered) {
        reserved.kept.add(row.folio);
      }
      const left = (reserved.open.get(row.folio) ?? 1) - 1;
      if (left > 0) {
        reserved.open.set(row.folio, left);
        return;
      }
      reserved.open.delete(row.folio);
      if (hold.view && !reserved.kept.has(row.folio)) {
        queueGiveBack(reserved, row.folio);
      }
    },
  };
}

export type WebhookViews = ReturnType<typeof createWebhookViews>;

/**
 * A tenant's uncharged rows of a claim are reserved at once, all-or-nothing against the month's
 * cap; when the quota cannot cover them all they are reserved one by one, in order, and the
 * ones it cannot cover are refused.
 */
async function reserveTenant(
  meter: LeadViewMeter,
  rows: ClaimedRow[],
  at: Date,
): Promise<Reserved> {
  const first = rows[0] as ClaimedRow;
  const anchor = first.billing_anniversary
    ? new Date(`${first.billing_anniversary}T00:00:00Z`)
    : at;
  const { start, end } = billingPeriodAt(anchor, at);
  // Every call below is one reservation, so whatever it charged can be given back.
  const charge = openLeadViewCharge(meter, {
    tenantId: first.tenant_id,
    period: { start, end },
    day: utcDay(at),
  });
  const cap = first.lead_views_per_month ?? 0;
  const fresh = () => ({ open: new Map<string, number>(), kept: new Set<string>() });
  const whole = await charge.reserve(
    cap,
    rows.map((row) => row.folio),
  );
  if (whole.ok) {
    return { charge, covered: rows, refused: [], folios: foliosToRecord(whole), ...fresh() };
  }
  const reserved: Reserved = { charge, covered: [], refused: [], folios: [], ...fresh() };
  for (const row of rows) {
    const one = await charge.reserve(cap, [row.folio]);
    if (one.ok) {
      reserved.covered.push(row);
      reserved.folios.push(...foliosToRecord(one));
    } else {
      reserved.refused.push(row);
    }
  }
  return reserved;
}

/** Gives back views in one call per reservation for everything settled in this turn. */
function createGiveBacks(logger: Logger) {
  const giveBacks = new Map<Reserved, string[]>();
  return (reserved: Reserved, folio: string) => {
    const wasEmpty = giveBacks.size === 0;
    giveBacks.set(reserved, [...(giveBacks.get(reserved) ?? []), folio]);
    if (wasEmpty) {
      setImmediate(() => {
        const pending = [...giveBacks];
        giveBacks.clear();
        for (const [owner, folios] of pending) {
          owner.charge.giveBack(folios).catch((error: unknown) => {
            logger.warn({ err: error }, "giving back undelivered lead-views failed");
          });
        }
      });
    }
  };
}
