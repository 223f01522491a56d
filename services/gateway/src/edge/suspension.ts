import { ApiError } from "@th/service-kit";

/**
 * The answer to a paid read of a suspended tenant (decision 0362): its payment failed and the
 * grace period ran out. 402, as the read cannot be paid for; the tenant's free operations (its
 * watchlists, webhooks, account and billing) keep working, so it can pay and read again at once.
 */
export function suspendedReads(): ApiError {
  return new ApiError(
    "payment_required",
    "reads that cost lead-views are suspended: this subscription's payment failed and its grace period has ended; pay the open invoice or change the card on the dashboard's billing page, and reads resume as soon as the payment succeeds",
  );
}

/** Whether the edge's status of a tenant says its paid reads are suspended. */
export function readsSuspended(status: string): boolean {
  return status === "suspended";
}
