export {
  type ClientOptions,
  createClient,
  type Lead,
  type LeadExport,
  type LeadSearch,
  type MatchSummary,
  type TerminalHouseClient,
  type Usage,
  type Watchlist,
  type WatchlistCreate,
  type WatchlistUpdate,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointWithSecret,
} from "./client.ts";
export {
  type ErrorBody,
  QuotaExceededError,
  RateLimitedError,
  TerminalHouseError,
  TierRequiredError,
} from "./errors.ts";
export type { components, operations, paths } from "./generated/openapi.ts";
export { type Limits, parseLimits } from "./limits.ts";
export { type Page, Pages, type Result } from "./pages.ts";
export type { RetryOptions } from "./retry.ts";
