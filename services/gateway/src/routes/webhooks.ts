import {
  getWebhookDeliveryBody,
  type webhookDeliveryBodyInternalSchema,
  webhookOperations,
} from "@th/api-schemas";
import type { HttpApp, InternalClient } from "@th/service-kit";
import type { z } from "zod";
import type { Metering } from "../edge/metering.ts";
import { callAs, relay } from "./forward.ts";
import { forwardOperation, ownerTarget, publicRoute } from "./operation.ts";

interface WebhookDeps {
  dispatcher: InternalClient;
  metering: Metering;
}

/**
 * Webhook endpoints and deliveries: owned by the webhook-dispatcher, reached through its internal
 * API as the authenticated caller. The `webhooks` surface gate answers 403 with `upgrade_url` on
 * Starter. A delivery's payload holds lead data: it is a paid read unless the delivery was
 * charged.
 */
export function registerWebhookRoutes(app: HttpApp, deps: WebhookDeps): void {
  for (const operation of webhookOperations) {
    if (operation !== getWebhookDeliveryBody) {
      forwardOperation(app, operation, deps.dispatcher);
    }
  }
  registerDeliveryBodyRoute(app, deps);
}

/**
 * A delivery's payload: a copy of a lead already paid for when the delivery was charged (its
 * 2xx), otherwise a read of its parcel's lead, metered like a dashboard expansion (one lead-view
 * per parcel and UTC day; 402 when the month's views are spent).
 */
function registerDeliveryBodyRoute(app: HttpApp, deps: WebhookDeps): void {
  app.get(
    getWebhookDeliveryBody.path,
    publicRoute(getWebhookDeliveryBody),
    async (request, reply) => {
      const upstream = await callAs(
        deps.dispatcher,
        request,
        "GET",
        ownerTarget(getWebhookDeliveryBody, request.params),
      );
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const found = upstream.body as z.infer<typeof webhookDeliveryBodyInternalSchema>;
      if (!found.charged) {
        await deps.metering.charge(request, [found.folio], "rest");
      }
      return { id: found.id, folio: found.folio, body: found.body };
    },
  );
}
