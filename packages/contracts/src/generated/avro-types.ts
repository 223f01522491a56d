// Generated from the newest revision of each packages/contracts/schemas/**/*.avsc; do not edit.
// Regenerate: AVRO_TYPES_UPDATE=1 npm test -- packages/contracts/src/avro-types.test.ts
//
// Encodings shared by every record: instants are RFC 3339 UTC with milliseconds, exactly
// Date#toISOString(); days are YYYY-MM-DD UTC calendar days; money is whole US dollars in a long;
// a nullable field is an Avro ["null", T] with default null.

export const FAILURE_KINDS = ["http_status", "timeout", "network", "blocked_address", "other"] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export const DELIVERY_STATES = ["complete", "retrying", "dead_letter"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Outcome of one HTTP attempt of one webhook delivery. Key: delivery_id. */
export interface DeliveryAttempted {
  /** UUID sent as X-FLPF-Webhook-Id; the same across retries and replays. */
  delivery_id: string;
  endpoint_id: string;
  tenant_id: string;
  watchlist_id: string;
  /** The match delivered; the payload's event_id. */
  match_id: string;
  folio: string;
  /** 1..5 within one run of the retry ladder. */
  attempt: number;
  /** 0 for the original delivery, n for the n-th replay from dead letter. */
  replay_no: number;
  /** RFC 3339 UTC. */
  attempted_at: string;
  /** Null when no request was sent (e.g. the address was refused). */
  duration_ms: number | null;
  /** Receiver's HTTP status; null on network error or timeout. */
  status_code: number | null;
  /** Null when the attempt succeeded. */
  failure: FailureKind | null;
  /** Short diagnostic; never headers, secrets or the body. */
  error: string | null;
  /** State of the delivery after this attempt, per the spec's transition table. */
  state: DeliveryState;
  /** When state is retrying, the instant the next attempt is due, RFC 3339 UTC. */
  next_attempt_at: string | null;
}

export const DEAD_LETTER_REASONS = ["attempts_exhausted", "rejected_by_receiver", "blocked_address", "endpoint_removed", "other"] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** A delivery that will not be retried again; held for replay until hold_until. Key: delivery_id. */
export interface DeliveryDeadLetter {
  /** UUID sent as X-FLPF-Webhook-Id; a replay keeps it. */
  delivery_id: string;
  endpoint_id: string;
  tenant_id: string;
  watchlist_id: string;
  match_id: string;
  folio: string;
  event_type: string;
  /** Exact UTF-8 request body, so a replay sends the same bytes. */
  payload_json: string;
  /** Attempts made before dead-lettering. */
  attempts: number;
  replay_no: number;
  /** rejected_by_receiver: a 4xx other than 408 and 429, which is never retried. */
  reason: DeadLetterReason;
  last_status_code: number | null;
  last_failure: FailureKind | null;
  last_error: string | null;
  /** RFC 3339 UTC. */
  first_attempted_at: string;
  /** RFC 3339 UTC. */
  last_attempted_at: string;
  /** RFC 3339 UTC; 30 minutes after a failed 5th attempt. */
  dead_lettered_at: string;
  /** End of the 30-day replay window, RFC 3339 UTC. */
  hold_until: string;
}

/** A delivery waiting for its next attempt; the same schema on every delivery.retry.* topic. Carries the exact body so every attempt sends identical bytes without a database read. Key: delivery_id. */
export interface DeliveryRetry {
  /** UUID sent as X-FLPF-Webhook-Id. */
  delivery_id: string;
  /** The dispatcher looks the URL and signing secret up by this id; secrets never travel on Kafka. */
  endpoint_id: string;
  tenant_id: string;
  watchlist_id: string;
  match_id: string;
  folio: string;
  /** X-FLPF-Event-Type, watchlist.match in v1. */
  event_type: string;
  /** Exact UTF-8 request body; signatures are over these bytes. */
  payload_json: string;
  /** Number of the attempt that is due, 2..5. */
  attempt: number;
  replay_no: number;
  /** Instant the attempt becomes due, RFC 3339 UTC. */
  due_at: string;
  /** RFC 3339 UTC. */
  first_attempted_at: string;
  last_status_code: number | null;
  last_failure: FailureKind | null;
  last_error: string | null;
}

/** An API key was issued. Never carries the secret. Key: tenant_id. */
export interface KeyIssued {
  key_id: string;
  tenant_id: string;
  /** Hex digest of the whole key, as the gateway computes it on each request. */
  key_hash: string;
  last4: string;
  /** Member the key is associated with. */
  member_id: string;
  label: string;
  /** RFC 3339 UTC. */
  issued_at: string;
}

export const KEY_REVOKE_REASONS = ["manual", "compromise", "tenant_cancelled", "other"] as const;
export type KeyRevokeReason = (typeof KEY_REVOKE_REASONS)[number];

/** An API key was revoked; takes effect on the next request. Carries the hash so caches keyed by hash evict without a lookup. Key: tenant_id. */
export interface KeyRevoked {
  key_id: string;
  tenant_id: string;
  key_hash: string;
  last4: string;
  /** Member the key was associated with. */
  member_id: string;
  label: string;
  /** Null when the system revoked it (e.g. tenant cancelled). */
  revoked_by_member_id: string | null;
  reason: KeyRevokeReason;
  /** RFC 3339 UTC. */
  revoked_at: string;
}

export interface Watchlist {
  id: string;
  name: string;
}

export const MATCH_TRIGGERS = ["ingest", "manual_run"] as const;
export type MatchTrigger = (typeof MATCH_TRIGGERS)[number];

export interface MatchOwner {
  name: string;
  /** USPS two-letter code; null when unknown or outside the US. */
  mailing_state: string | null;
}

export interface MatchValuation {
  /** Whole US dollars. */
  just_value: number;
  /** Whole US dollars; null when no usable purchase basis. */
  est_equity: number | null;
}

export interface Match {
  folio: string;
  /** Single-line situs address. */
  address: string;
  /** In [0, 1]. */
  score: number;
  signals_fired: string[];
  owner: MatchOwner;
  valuation: MatchValuation;
  /** RFC 3339 UTC. */
  observed_at: string;
}

/** A parcel matched a watchlist's recipe. Key: tenant_id, so one tenant's matches stay in order. The match record mirrors the watchlist.match webhook payload. */
export interface MatchFound {
  /** Deterministic over (tenant, watchlist, recipe_version, folio, parcel content_hash) so a re-run of the same ingest yields the same id; used as the webhook event_id. */
  match_id: string;
  tenant_id: string;
  watchlist: Watchlist;
  /** Version of the recipe that scored this match. */
  recipe_version: number;
  /** manual_run comes from POST /v1/watchlists/{id}/run. */
  trigger: MatchTrigger;
  /** Ingest run that produced the parcel; null for manual runs over the stored parcels. */
  ingest_id: string | null;
  /** content_hash of the parcel version that matched. */
  parcel_content_hash: string;
  match: Match;
  /** Instant the match was made, RFC 3339 UTC; the webhook's occurred_at. */
  occurred_at: string;
}

export const ROLL_STAGES = ["preliminary", "final"] as const;
export type RollStage = (typeof ROLL_STAGES)[number];

export interface Situs {
  /** PHY_ADDR1 and PHY_ADDR2 joined. */
  address: string | null;
  /** PHY_CITY; may be UNINCORPORATED. */
  city: string | null;
  /** Kept as text to preserve leading zeros. */
  zip: string | null;
}

/** DOR_UC ranges: 000-009 residential, 010-039 commercial, 040-049 industrial, 050-069 agricultural, 070-079 institutional, 080-089 governmental, 090-099 miscellaneous. */
export const USE_CLASSES = ["residential", "commercial", "industrial", "agricultural", "institutional", "governmental", "miscellaneous"] as const;
export type UseClass = (typeof USE_CLASSES)[number];

export interface LandUse {
  /** DOR land-use code, zero-padded to 3 characters. */
  dor_uc: string | null;
  use_class: UseClass | null;
  /** PA_UC, the county appraiser's own use code. */
  appraiser_uc: string | null;
}

export interface MailingAddress {
  line1: string | null;
  line2: string | null;
  city: string | null;
  /** OWN_STATE exactly as on the roll, before normalization. */
  state: string | null;
  /** Kept as text to preserve leading zeros. */
  zip: string | null;
}

export interface Owner {
  /** OWN_NAME as on the roll; empty when the roll has none. */
  name: string;
  /** USPS two-letter code normalized from OWN_STATE (FLORIDA -> FL); null when blank or outside the US. */
  mailing_state: string | null;
  mailing_address: MailingAddress;
}

export interface Valuation {
  /** JV. */
  just_value: number;
  /** AV_NSD (non-school), the capped value county and city taxes use. */
  assessed_value: number | null;
  /** TV_NSD (non-school). */
  taxable_value: number | null;
  /** LND_VAL. */
  land_value: number | null;
  /** Estimate: just value minus the amortized balance of the last purchase's assumed loan; negative is meaningful; null when no usable purchase basis. */
  est_equity: number | null;
  /** est_equity / just_value; null when either is unknown or just_value is 0. */
  equity_ratio: number | null;
}

/** The roll records a sale's year and month only, never the day. */
export interface Sale {
  /** Whole US dollars. */
  price: number;
  year: number;
  /** 1..12. */
  month: number;
  /** DOR QUAL_CD, two digits; 01 and 02 are arm's-length. */
  qualification_code: string | null;
}

/** One parcel whose roll content changed (or was first seen) in an ingest run. Key: folio. */
export interface ParcelIngested {
  /** Ingest run that produced this record; groups one roll file's output. */
  ingest_id: string;
  /** Statewide lead id built from county_no and parcel_id; a bare county PARCEL_ID is not unique across Florida. */
  folio: string;
  /** DOR county number CO_NO, 11..77 (23 = Miami-Dade). */
  county_no: number;
  /** County PARCEL_ID as on the roll, trimmed, leading zeros kept. */
  parcel_id: string;
  /** ASMNT_YR. */
  roll_year: number;
  /** P or F roll submission; a final roll can restate a preliminary one. */
  roll_stage: RollStage;
  /** Roll file name, e.g. NAL23F202501.csv. */
  source_file: string | null;
  /** Hex SHA-256 of the normalized roll fields; equal hashes mean nothing a recipe can see changed. */
  content_hash: string;
  /** Hash of the parcel's previous ingested content; null when first seen. */
  previous_content_hash: string | null;
  /** Physical (situs) address; vacant land often has none. */
  situs: Situs;
  land_use: LandUse;
  owner: Owner;
  /** Whole US dollars. */
  valuation: Valuation;
  /** ACT_YR_BLT. */
  year_built: number | null;
  /** TOT_LVG_AREA. */
  living_area_sqft: number | null;
  /** LND_SQFOOT. */
  land_sqft: number | null;
  /** JV_HMSTD > 0 or a homestead exemption; the strongest owner-occupancy tell on a Florida roll. */
  homestead: boolean;
  /** Most recent sale on the roll (SALE_*1), of any qualification. */
  last_sale: Sale | null;
  /** Most recent arm's-length sale (QUAL_CD 01/02); the purchase basis for est_equity. */
  last_qualified_sale: Sale | null;
  /** Names of the roll-derived signals that fired, e.g. absentee_owner, out_of_state_owner. */
  signals_fired: string[];
  /** Instant the parcel content was observed, RFC 3339 UTC. */
  observed_at: string;
}

export const PIPELINE_CHANGE_TYPES = ["added", "moved", "assigned", "tagged", "follow_up_set", "noted", "removed", "other"] as const;
export type PipelineChangeType = (typeof PIPELINE_CHANGE_TYPES)[number];

/** One change of a pipeline item: the item's history is the stream of these, in version order. Folding an item's events gives the item. Key: tenant_id. */
export interface PipelineItemChanged {
  /** Unique; a consumer's idempotency key. */
  event_id: string;
  tenant_id: string;
  item_id: string;
  folio: string;
  /** The item's version after this change; 1 for the add, then one more per change. */
  version: number;
  type: PipelineChangeType;
  /** The member who made the change. */
  member_id: string;
  /** The API key it came through; null from a dashboard session. */
  key_id: string | null;
  /** RFC 3339 UTC. */
  occurred_at: string;
  /** added, moved: the stage it is in after the change. */
  stage_id: string | null;
  /** moved: the stage it left. */
  from_stage_id: string | null;
  /** added, assigned: the member now assigned; null for none. */
  assignee_id: string | null;
  /** added, tagged: the whole set of tags after the change. */
  tags: string[] | null;
  /** added, follow_up_set: the next follow-up day (YYYY-MM-DD); null for none. */
  follow_up_on: string | null;
  /** noted: the note's id. */
  note_id: string | null;
  /** noted: the note. */
  note_text: string | null;
  /** added: the lead as the tenant read it, as JSON in the REST Lead shape. */
  lead_snapshot: string | null;
}

export const PIPELINE_STAGE_CHANGE_TYPES = ["created", "renamed", "reordered", "retired", "restored", "other"] as const;
export type PipelineStageChangeType = (typeof PIPELINE_STAGE_CHANGE_TYPES)[number];

/** A tenant's pipeline stage as it is after a change: a full snapshot of the stage. Key: tenant_id. */
export interface PipelineStageChanged {
  event_id: string;
  tenant_id: string;
  stage_id: string;
  type: PipelineStageChangeType;
  name: string;
  position: number;
  retired: boolean;
  /** The admin who made the change; null for the default stages a tenant starts with. */
  member_id: string | null;
  /** RFC 3339 UTC. */
  occurred_at: string;
}

export const TIERS = ["starter", "operator", "team", "custom"] as const;
export type Tier = (typeof TIERS)[number];

export const TENANT_STATUSES = ["trialing", "active", "cancelled"] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

export interface QuotaLimits {
  lead_views_per_month: number;
  rate_per_minute: number;
  /** Deliveries in flight at once; 0 when the tier has no webhooks. */
  concurrent_webhooks: number;
  seats: number;
}

/** A default, so a later revision may add a symbol. */
export const PAYMENT_STANDINGS = ["good", "past_due", "suspended"] as const;
export type PaymentStanding = (typeof PAYMENT_STANDINGS)[number];

/** Full current state of a tenant after any change; the newest revision per tenant wins. Key: tenant_id. */
export interface TenantChanged {
  tenant_id: string;
  /** Increases by one per change of this tenant, so consumers can drop stale or duplicate snapshots. */
  revision: number;
  /** No default on purpose: an unknown tier must not silently open or close surfaces. */
  tier: Tier;
  status: TenantStatus;
  /** Explicit so Custom tiers carry their negotiated figures. */
  limits: QuotaLimits;
  /** Activation date, YYYY-MM-DD; the monthly quota resets on this day of month, clamped to the month's last day. */
  billing_anniversary: string | null;
  /** RFC 3339 UTC; set while trialing. */
  trial_ends_at: string | null;
  /** RFC 3339 UTC. */
  changed_at: string;
  /** Whether the tenant's payments are in order, apart from status: good (paid up, or trialing); past_due (a payment failed, the grace period runs, reads go on); suspended (the grace ran out: paid reads are refused until a payment succeeds). Records written before this field read as good. */
  standing?: PaymentStanding;
}

export const SURFACES = ["rest", "mcp", "csv", "web", "webhook", "other"] as const;
export type Surface = (typeof SURFACES)[number];

/** One billable lead-view: a unique (tenant, folio, UTC day). Recorded before the read is answered; consumers dedupe on (tenant_id, folio, day) because delivery is at-least-once. Key: tenant_id. */
export interface LeadViewRecorded {
  tenant_id: string;
  folio: string;
  /** UTC calendar day of the read, YYYY-MM-DD. */
  day: string;
  /** First UTC day of the billing period the view is charged to, YYYY-MM-DD (the anniversary, clamped to month end). */
  billing_period_start: string;
  surface: Surface;
  /** Request that caused the view; the delivery id for webhook views. */
  request_id: string;
  /** API key used; null for the web UI and webhooks. */
  key_id: string | null;
  /** Team member behind the read, when known. */
  member_id: string | null;
  /** RFC 3339 UTC. */
  recorded_at: string;
}

/** The lead-views of one read that was answered without its lead (the broker did not acknowledge their leadview.recorded in time, or the client went away): whatever of them reached the log must not be charged. Consumers apply it idempotently, before or after the recorded events it names. Key: tenant_id. */
export interface LeadViewVoided {
  tenant_id: string;
  /** The read whose leadview.recorded events are void; the same request_id they carry. */
  request_id: string;
  /** UTC calendar day of the read, YYYY-MM-DD, as in the recorded events. */
  day: string;
  /** Every folio the read recorded (or tried to). */
  folios: string[];
  /** Why the read was not delivered: publish_timeout, client_gone or publish_failed. */
  reason: string;
  /** RFC 3339 UTC. */
  voided_at: string;
}
