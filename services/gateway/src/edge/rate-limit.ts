import { ApiError } from "@th/service-kit";
import type { RateWindow } from "./edge-store.ts";

/** Whole seconds until the window frees a request, never less than one. */
export function retryAfterSeconds(window: RateWindow, now: number): number {
  return Math.max(1, Math.ceil((window.retryAtMs - now) / 1000));
}

/** The 429 of a refused window, with the wait in its body and in Retry-After. */
export function rateLimited(window: RateWindow, now: number, who: string): ApiError {
  const seconds = retryAfterSeconds(window, now);
  return new ApiError(
    "rate_limited",
    `${who} exceeded ${window.limit} requests per rolling minute; wait ${seconds} s before retrying (retrying sooner extends the wait)`,
    { retry_after_seconds: seconds },
    { "retry-after": String(seconds) },
  );
}
