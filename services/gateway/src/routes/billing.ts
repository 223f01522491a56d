import { randomUUID } from "node:crypto";
import { confirmTrial, getBilling, startTrial } from "@th/api-schemas";
import {
  ApiError,
  errorResponses,
  type HttpApp,
  type InternalClient,
  rawBodyOf,
} from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { retryAfterSeconds, trialDomainOf } from "../domain/trial-domains.ts";
import type { EdgeStore } from "../edge/edge-store.ts";
import type { TrialSlot } from "../edge/store/trial-starts.ts";
import { relay } from "./forward.ts";
import { callOwner, forwardOperation, publicRoute } from "./operation.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Where Stripe delivers its webhook events; registered in Stripe's dashboard (docs/operations.md). */
const STRIPE_WEBHOOK_PATH = "/v1/public/billing/stripe-events";
/** The keys service's route that verifies and applies them. */
const STRIPE_EVENTS_TARGET = "/internal/v1/billing/stripe-events";
/** Stripe's events are far smaller; a larger body is refused before anything reads it. */
const STRIPE_EVENT_BODY_LIMIT = 256 * 1024;

interface TrialLimits {
  /** Trial starts per client address per hour, refused ones by the card included. */
  perAddressPerHour: number;
  /** Trials started per email domain per day. */
  perDomainPerDay: number;
}

interface BillingRouteDeps {
  keys: InternalClient;
  store: EdgeStore;
  trialLimits: TrialLimits;
  authFailureRatePerMinute: number;
  now: () => number;
}

/**
 * Billing at the edge (decisions 0361 and 0362): trial starts limited per client address and
 * per email domain, Stripe's webhook endpoint, and the tenant's billing page. Each limit is
 * decided on the matched route, as every guard of the edge is.
 */
export function registerBillingRoutes(app: HttpApp, deps: BillingRouteDeps): void {
  registerTrialStart(app, deps);
  // Needs the client secret only the starting browser holds; the public per-IP window applies.
  forwardOperation(app, confirmTrial, deps.keys);
  registerStripeWebhook(app, deps);
  forwardOperation(app, getBilling, deps.keys);
}

function slotRefused(slot: TrialSlot, whose: string, now: number): ApiError {
  const seconds = retryAfterSeconds(slot.retryAtMs, now);
  return new ApiError(
    "rate_limited",
    `too many trials started from ${whose}; try again in ${seconds} s, or contact sales`,
    { retry_after_seconds: seconds },
    { "retry-after": String(seconds) },
  );
}

/**
 * A trial start takes a slot of its client address's hourly window first, kept whatever the
 * outcome, so one address cannot test card after card; then a slot of its email domain's daily
 * window, given back unless the trial starts, so refused cards and anyone else's failed
 * attempts cannot use up a domain's trials. Both before the keys service, and so the card
 * processor, is asked anything.
 */
function registerTrialStart(app: HttpApp, deps: BillingRouteDeps): void {
  app.post(startTrial.path, publicRoute(startTrial), async (request, reply) => {
    const { store, trialLimits } = deps;
    const now = deps.now();
    const start = randomUUID();
    const byAddress = await store.takeTrialSlot(
      "ip",
      request.ip,
      start,
      trialLimits.perAddressPerHour,
      HOUR_MS,
      now,
    );
    if (!byAddress.allowed) {
      throw slotRefused(byAddress, "this client address", now);
    }
    const domain = trialDomainOf(request.body.admin_email);
    const byDomain = await store.takeTrialSlot(
      "domain",
      domain,
      start,
      trialLimits.perDomainPerDay,
      DAY_MS,
      now,
    );
    if (!byDomain.allowed) {
      throw slotRefused(byDomain, `email addresses at ${domain}`, now);
    }
    let started = false;
    try {
      const upstream = await callOwner(deps.keys, startTrial, request);
      // 202: started, waiting for the card's 3-D Secure; it keeps its slot (decision 0364).
      started = upstream.status === 201 || upstream.status === 202;
      return relay(reply, upstream);
    } finally {
      if (!started) {
        await store.giveBackTrialSlot("domain", domain, start);
      }
    }
  });
}

/**
 * A refused Stripe signature counts against the client address like a wrong credential: past
 * the failed-authentication window, 429 instead of 401.
 */
async function refuseSignature(deps: BillingRouteDeps, request: FastifyRequest, detail: string) {
  const now = deps.now();
  const window = await deps.store.limitIp(
    "authfail",
    request.ip,
    deps.authFailureRatePerMinute,
    now,
  );
  request.edge = { window };
  if (!window.allowed) {
    const seconds = retryAfterSeconds(window.retryAtMs, now);
    throw new ApiError(
      "rate_limited",
      `too many refused signatures from this client; wait ${seconds} s`,
      { retry_after_seconds: seconds },
      { "retry-after": String(seconds) },
    );
  }
  throw new ApiError("unauthorized", detail);
}

/**
 * Stripe's webhooks. Public at the edge, with the signature as its own credential: Stripe's
 * deliveries share addresses with every other Stripe account's, so the anonymous per-IP window
 * does not apply, and a signature that does not verify counts in the address's
 * failed-authentication window. The body goes to the keys service byte for byte with its
 * Stripe-Signature header; it holds the signing secret and verifies with Stripe's SDK.
 */
function registerStripeWebhook(app: HttpApp, deps: BillingRouteDeps): void {
  app.post(
    STRIPE_WEBHOOK_PATH,
    {
      bodyLimit: STRIPE_EVENT_BODY_LIMIT,
      config: { edge: { public: true, ownCredential: true } },
      schema: {
        tags: ["billing"],
        operationId: "receiveStripeEvent",
        summary:
          "Stripe's webhook endpoint: events verified by their Stripe-Signature and applied once each",
        headers: z.object({ "stripe-signature": z.string().min(1).max(2_000) }),
        body: z.looseObject({ id: z.string(), type: z.string() }),
        response: {
          200: z.object({
            received: z.literal(true),
            outcome: z.enum(["applied", "duplicate", "ignored"]),
          }),
          ...errorResponses("unauthorized", "rate_limited", "payload_too_large", "unavailable"),
        },
      },
    },
    async (request, reply) => {
      const upstream = await deps.keys.send("POST", STRIPE_EVENTS_TARGET, {
        requestId: request.id,
        body: {
          payload: rawBodyOf(request) ?? "",
          signature: request.headers["stripe-signature"],
        },
      });
      if (upstream.status === 401) {
        const detail = (upstream.body as { detail?: string } | undefined)?.detail;
        return refuseSignature(deps, request, detail ?? "the Stripe-Signature does not verify");
      }
      return relay(reply, upstream);
    },
  );
}
