/**
 * The six headers the spec puts on every authenticated response, errors included: the shared
 * per-minute rate limit and the monthly lead-view quota. Written out here, not taken from the
 * gateway, so a test holds the gateway to the spec rather than to itself.
 */
export const SIX_HEADERS = [
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "x-quota-lead-views-limit",
  "x-quota-lead-views-remaining",
  "x-quota-resets",
] as const;
