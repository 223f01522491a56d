// Realistic records for tests here and in the services. Each topic has a
// "full" sample with every nullable set and a "sparse" one with every
// nullable null, so both union branches are exercised.
import type {
  DeliveryAttempted,
  DeliveryDeadLetter,
  DeliveryRetry,
  KeyIssued,
  KeyRevoked,
  LeadViewRecorded,
  LeadViewVoided,
  MatchFound,
  ParcelIngested,
  PipelineItemChanged,
  PipelineStageChanged,
  TenantChanged,
} from "./types.ts";

// The generator behind the synthetic records of the services' fixtures and the benches.
export { seededRandom } from "./seeded-random.ts";

export const parcelIngested: ParcelIngested = {
  ingest_id: "ing_2025F_23_01",
  folio: "23-3059010240130",
  county_no: 23,
  parcel_id: "3059010240130",
  roll_year: 2025,
  roll_stage: "final",
  source_file: "NAL23F202501.csv",
  content_hash: "9b1d5e0c6f2a4e7b8c3d1a2f4e6b8d0c2a4e6f8b0d2c4e6a8b0c2d4e6f8a0b2c",
  previous_content_hash: "1f3e5d7c9b0a2c4e6f8a0b2d4c6e8f0a2b4d6c8e0f2a4b6d8c0e2f4a6b8d0c2e",
  situs: { address: "1388 NW 7TH ST", city: "MIAMI", zip: "33125" },
  land_use: { dor_uc: "001", use_class: "residential", appraiser_uc: "0101" },
  owner: {
    name: "VINGIANO PATRICIA",
    mailing_state: "CT",
    mailing_address: {
      line1: "12 ELM ST",
      line2: "APT 4",
      city: "WEST HAVEN",
      state: "CONNECTICUT",
      zip: "06516",
    },
  },
  valuation: {
    just_value: 412_300,
    assessed_value: 298_100,
    taxable_value: 298_100,
    land_value: 185_000,
    est_equity: 301_844,
    equity_ratio: 0.7321,
  },
  year_built: 1954,
  living_area_sqft: 1_420,
  land_sqft: 5_750,
  homestead: false,
  last_sale: { price: 10, year: 2019, month: 6, qualification_code: "11" },
  last_qualified_sale: { price: 193_000, year: 2011, month: 9, qualification_code: "01" },
  signals_fired: ["absentee_owner", "out_of_state_owner", "long_term_owner", "high_equity"],
  observed_at: "2025-10-14T06:12:44.318Z",
};

export const parcelIngestedSparse: ParcelIngested = {
  ingest_id: "ing_2025P_16_01",
  folio: "16-473725000000",
  county_no: 16,
  parcel_id: "473725000000",
  roll_year: 2025,
  roll_stage: "preliminary",
  source_file: null,
  content_hash: "0c2a4e6f8b0d2c4e6a8b0c2d4e6f8a0b2c9b1d5e0c6f2a4e7b8c3d1a2f4e6b8d",
  previous_content_hash: null,
  situs: { address: null, city: null, zip: null },
  land_use: { dor_uc: null, use_class: null, appraiser_uc: null },
  owner: {
    name: "",
    mailing_state: null,
    mailing_address: { line1: null, line2: null, city: null, state: null, zip: null },
  },
  valuation: {
    just_value: 0,
    assessed_value: null,
    taxable_value: null,
    land_value: null,
    est_equity: null,
    equity_ratio: null,
  },
  year_built: null,
  living_area_sqft: null,
  land_sqft: null,
  homestead: true,
  last_sale: null,
  last_qualified_sale: null,
  signals_fired: [],
  observed_at: "2025-07-01T00:00:00.000Z",
};

export const matchFound: MatchFound = {
  match_id: "m_5c0e1f7a9d3b2c4e",
  tenant_id: "tn_01HZX3Q8M4",
  watchlist: { id: "wl_absentee_miami", name: "Absentee owners, Miami-Dade" },
  recipe_version: 3,
  trigger: "ingest",
  ingest_id: "ing_2025F_23_01",
  parcel_content_hash: parcelIngested.content_hash,
  match: {
    folio: parcelIngested.folio,
    address: "1388 NW 7TH ST, MIAMI 33125",
    score: 0.8125,
    signals_fired: ["absentee_owner", "out_of_state_owner", "long_term_owner", "high_equity"],
    owner: { name: "VINGIANO PATRICIA", mailing_state: "CT" },
    valuation: { just_value: 412_300, est_equity: 301_844 },
    observed_at: parcelIngested.observed_at,
  },
  occurred_at: "2025-10-14T06:12:45.002Z",
};

export const matchFoundSparse: MatchFound = {
  ...matchFound,
  trigger: "manual_run",
  ingest_id: null,
  match: {
    ...matchFound.match,
    signals_fired: [],
    owner: { name: "", mailing_state: null },
    valuation: { just_value: 0, est_equity: null },
  },
};

export const deliveryAttempted: DeliveryAttempted = {
  delivery_id: "2f0c5a8e-6b1d-4c3e-9a7f-0d2b4e6c8a1f",
  endpoint_id: "we_01HZX4A1B2",
  tenant_id: matchFound.tenant_id,
  watchlist_id: matchFound.watchlist.id,
  match_id: matchFound.match_id,
  folio: matchFound.match.folio,
  attempt: 2,
  replay_no: 0,
  attempted_at: "2025-10-14T06:12:46.120Z",
  duration_ms: 10_004,
  status_code: 503,
  failure: "http_status",
  error: "receiver answered 503",
  state: "retrying",
  next_attempt_at: "2025-10-14T06:12:51.120Z",
};

export const deliveryAttemptedSparse: DeliveryAttempted = {
  ...deliveryAttempted,
  attempt: 1,
  duration_ms: null,
  status_code: null,
  failure: null,
  error: null,
  state: "complete",
  next_attempt_at: null,
};

export const deliveryRetry: DeliveryRetry = {
  delivery_id: deliveryAttempted.delivery_id,
  endpoint_id: deliveryAttempted.endpoint_id,
  tenant_id: deliveryAttempted.tenant_id,
  watchlist_id: deliveryAttempted.watchlist_id,
  match_id: deliveryAttempted.match_id,
  folio: deliveryAttempted.folio,
  event_type: "watchlist.match",
  payload_json: '{"event_id":"m_5c0e1f7a9d3b2c4e","event_type":"watchlist.match"}',
  attempt: 3,
  replay_no: 0,
  due_at: "2025-10-14T06:12:51.120Z",
  first_attempted_at: "2025-10-14T06:12:45.110Z",
  last_status_code: 503,
  last_failure: "http_status",
  last_error: "receiver answered 503",
};

export const deliveryRetrySparse: DeliveryRetry = {
  ...deliveryRetry,
  attempt: 2,
  last_status_code: null,
  last_failure: null,
  last_error: null,
};

export const deliveryDeadLetter: DeliveryDeadLetter = {
  delivery_id: deliveryRetry.delivery_id,
  endpoint_id: deliveryRetry.endpoint_id,
  tenant_id: deliveryRetry.tenant_id,
  watchlist_id: deliveryRetry.watchlist_id,
  match_id: deliveryRetry.match_id,
  folio: deliveryRetry.folio,
  event_type: deliveryRetry.event_type,
  payload_json: deliveryRetry.payload_json,
  attempts: 5,
  replay_no: 1,
  reason: "attempts_exhausted",
  last_status_code: 500,
  last_failure: "http_status",
  last_error: "receiver answered 500",
  first_attempted_at: "2025-10-14T06:12:45.110Z",
  last_attempted_at: "2025-10-14T06:18:21.110Z",
  dead_lettered_at: "2025-10-14T06:48:21.110Z",
  hold_until: "2025-11-13T06:48:21.110Z",
};

export const deliveryDeadLetterSparse: DeliveryDeadLetter = {
  ...deliveryDeadLetter,
  attempts: 1,
  replay_no: 0,
  reason: "rejected_by_receiver",
  last_status_code: null,
  last_failure: null,
  last_error: null,
};

export const leadViewRecorded: LeadViewRecorded = {
  tenant_id: matchFound.tenant_id,
  folio: parcelIngested.folio,
  day: "2025-10-14",
  billing_period_start: "2025-09-30",
  surface: "rest",
  request_id: "req_7f3a9c",
  key_id: "key_01HZX5K9",
  member_id: "mem_01HZX3Q9",
  recorded_at: "2025-10-14T15:04:05.006Z",
};

export const leadViewRecordedSparse: LeadViewRecorded = {
  ...leadViewRecorded,
  surface: "webhook",
  request_id: deliveryAttempted.delivery_id,
  key_id: null,
  member_id: null,
};

export const leadViewVoided: LeadViewVoided = {
  tenant_id: leadViewRecorded.tenant_id,
  request_id: leadViewRecorded.request_id,
  day: leadViewRecorded.day,
  folios: [leadViewRecorded.folio],
  reason: "publish_timeout",
  voided_at: "2025-10-14T15:04:07.010Z",
};

export const tenantChanged: TenantChanged = {
  tenant_id: matchFound.tenant_id,
  revision: 4,
  tier: "team",
  status: "trialing",
  limits: { lead_views_per_month: 5_000, rate_per_minute: 600, concurrent_webhooks: 10, seats: 5 },
  billing_anniversary: "2025-09-30",
  trial_ends_at: "2025-10-14T09:30:00.000Z",
  changed_at: "2025-09-30T09:30:00.000Z",
  standing: "good",
};

export const tenantChangedSparse: TenantChanged = {
  ...tenantChanged,
  tier: "starter",
  status: "cancelled",
  limits: { lead_views_per_month: 500, rate_per_minute: 300, concurrent_webhooks: 0, seats: 1 },
  billing_anniversary: null,
  trial_ends_at: null,
  standing: "suspended",
};

export const keyIssued: KeyIssued = {
  key_id: "key_01HZX5K9",
  tenant_id: matchFound.tenant_id,
  key_hash: "4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a",
  last4: "Q7xz",
  member_id: "mem_01HZX3Q9",
  label: "crm sync",
  issued_at: "2025-09-30T09:30:01.000Z",
};

export const keyRevoked: KeyRevoked = {
  key_id: keyIssued.key_id,
  tenant_id: keyIssued.tenant_id,
  key_hash: keyIssued.key_hash,
  last4: keyIssued.last4,
  member_id: keyIssued.member_id,
  label: keyIssued.label,
  revoked_by_member_id: "mem_01HZX3Q9",
  reason: "compromise",
  revoked_at: "2025-12-01T12:00:00.000Z",
};

export const keyRevokedSparse: KeyRevoked = {
  key_id: keyIssued.key_id,
  tenant_id: keyIssued.tenant_id,
  key_hash: keyIssued.key_hash,
  last4: keyIssued.last4,
  member_id: keyIssued.member_id,
  label: keyIssued.label,
  revoked_by_member_id: null,
  reason: "tenant_cancelled",
  revoked_at: "2025-12-01T12:00:00.000Z",
};

export const pipelineItemAdded: PipelineItemChanged = {
  event_id: "ple_01HZX3K8Q2W5V7M9N4R6T8Y0A1",
  tenant_id: "ten_01HZX2Y3Q4W5E6R7T8Y9U0I1O2",
  item_id: "pli_01HZX3K8Q2W5V7M9N4R6T8Y0B2",
  folio: "23-3059010240130",
  version: 1,
  type: "added",
  member_id: "mem_01HZX2Y3Q4W5E6R7T8Y9U0I1O3",
  key_id: "key_01HZX2Y3Q4W5E6R7T8Y9U0I1O4",
  occurred_at: "2026-11-21T12:00:00.000Z",
  stage_id: "stg_new",
  from_stage_id: "stg_contacted",
  assignee_id: "mem_01HZX2Y3Q4W5E6R7T8Y9U0I1O3",
  tags: ["absentee", "hot"],
  follow_up_on: "2026-11-24",
  note_id: "note_01HZX3K8Q2W5V7M9N4R6T8Y0C3",
  note_text: "Owner lives in Ohio; call after 6pm.",
  lead_snapshot: '{"folio":"23-3059010240130"}',
};

export const pipelineItemMovedSparse: PipelineItemChanged = {
  event_id: "ple_01HZX3K8Q2W5V7M9N4R6T8Y0A2",
  tenant_id: "ten_01HZX2Y3Q4W5E6R7T8Y9U0I1O2",
  item_id: "pli_01HZX3K8Q2W5V7M9N4R6T8Y0B2",
  folio: "23-3059010240130",
  version: 2,
  type: "moved",
  member_id: "mem_01HZX2Y3Q4W5E6R7T8Y9U0I1O3",
  key_id: null,
  occurred_at: "2026-11-21T12:05:00.000Z",
  stage_id: null,
  from_stage_id: null,
  assignee_id: null,
  tags: null,
  follow_up_on: null,
  note_id: null,
  note_text: null,
  lead_snapshot: null,
};

export const pipelineStageChanged: PipelineStageChanged = {
  event_id: "pse_01HZX3K8Q2W5V7M9N4R6T8Y0D4",
  tenant_id: "ten_01HZX2Y3Q4W5E6R7T8Y9U0I1O2",
  stage_id: "stg_01HZX3K8Q2W5V7M9N4R6T8Y0E5",
  type: "renamed",
  name: "Appointment set",
  position: 2,
  retired: false,
  member_id: "mem_01HZX2Y3Q4W5E6R7T8Y9U0I1O3",
  occurred_at: "2026-11-21T12:10:00.000Z",
};

export const pipelineStageChangedSparse: PipelineStageChanged = {
  ...pipelineStageChanged,
  type: "created",
  name: "New",
  position: 0,
  member_id: null,
};
