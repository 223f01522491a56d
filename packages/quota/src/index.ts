// The package's entry: the meter, the charge protocol built on it, and the ledger seeding the
// meter falls back on. Each module imports the meter directly, never this index, so the
// dependencies point one way.
export {
  foliosToRecord,
  type Granted,
  type LeadViewCharge,
  type LeadViewReader,
  openLeadViewCharge,
} from "./charge.ts";
export { leadViewDayKey } from "./day-keys.ts";
export { type LedgerGet, ledgerUsageLoader } from "./ledger-seed.ts";
export {
  createLeadViewMeter,
  LEAD_VIEW_COUNTER_PREFIX,
  type LeadViewMeter,
  type LedgerUsage,
  METER_BATCH_COMMAND,
  type Period,
  type Reservation,
  SETTLE_WINDOW_MS,
  type UsageLoader,
  utcDay,
} from "./meter.ts";
export { createViewedToday, type ViewedToday } from "./viewed-today.ts";
