import { getBilling, requestSchemas } from "@th/api-schemas";
import { errorResponses, type HttpApp, internalCaller } from "@th/service-kit";
import { z } from "zod";
import type { Accounts } from "../db/accounts.ts";

/** Stripe's largest event payloads stay far below this. */
const MAX_EVENT_BYTES = 512 * 1024;

export const STRIPE_EVENTS_PATH = "/internal/v1/billing/stripe-events";

const stripeEventBodySchema = z.strictObject({
  /** The webhook's body exactly as Stripe sent it: the signature is over these bytes. */
  payload: z.string().min(2).max(MAX_EVENT_BYTES),
  /** Stripe's `Stripe-Signature` header. */
  signature: z.string().min(1).max(2_000),
});

const outcomeSchema = z.object({
  received: z.literal(true),
  outcome: z.enum(["applied", "duplicate", "ignored"]),
});

/**
 * Billing: the processor's webhooks, relayed by the gateway with their raw body and signature
 * (verified here, where the signing secret is), and the tenant's billing page.
 */
export function registerInternalBillingRoutes(app: HttpApp, accounts: Accounts): void {
  app.post(
    STRIPE_EVENTS_PATH,
    {
      schema: {
        body: stripeEventBodySchema,
        response: { 200: outcomeSchema, ...errorResponses("unauthorized", "unavailable") },
      },
    },
    async (request) => {
      const result = await accounts.receiveBillingEvent(
        request.body.payload,
        request.body.signature,
      );
      if (result.outcome === "ignored") {
        request.log.info({ reason: result.reason }, "billing event acknowledged, nothing to apply");
      }
      return { received: true as const, outcome: result.outcome };
    },
  );

  app.get(
    getBilling.internalPath,
    {
      schema: {
        ...requestSchemas(getBilling),
        response: { 200: getBilling.responses[200], ...errorResponses() },
      },
    },
    async (request) => accounts.getBilling(internalCaller(request)),
  );
}
