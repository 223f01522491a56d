import {
  contactBodySchema,
  contactResponseSchema,
  startTrialBodySchema,
  startTrialResponseSchema,
} from "@th/api-schemas";
import { errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import { relay } from "./forward.ts";

const publicRoute = { edge: { public: true } };
const tags = ["public"];

/** Endpoints without a key: an Authorization header is ignored; each client IP has its own limit. */
export function registerPublicRoutes(app: HttpApp, deps: { keys: InternalClient }): void {
  app.post(
    "/v1/public/trials",
    {
      config: publicRoute,
      schema: {
        tags,
        operationId: "startTrial",
        summary:
          "Start a 14-day trial of any tier with a card token; nothing is charged before day 14. The first API key is in this response only.",
        body: startTrialBodySchema,
        response: {
          201: startTrialResponseSchema,
          ...errorResponses("payment_declined", "rate_limited"),
        },
      },
    },
    async (request, reply) =>
      relay(
        reply,
        await deps.keys.send("POST", "/internal/v1/trials", {
          requestId: request.id,
          body: request.body,
        }),
      ),
  );

  app.post(
    "/v1/public/contact",
    {
      config: publicRoute,
      schema: {
        tags,
        operationId: "contactSales",
        summary: "Send a message to the team (custom tiers, questions)",
        body: contactBodySchema,
        response: { 202: contactResponseSchema, ...errorResponses("rate_limited") },
      },
    },
    async (request, reply) =>
      relay(
        reply,
        await deps.keys.send("POST", "/internal/v1/contact", {
          requestId: request.id,
          body: request.body,
        }),
      ),
  );
}
