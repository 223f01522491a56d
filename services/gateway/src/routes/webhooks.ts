import { webhookOperations } from "@th/api-schemas";
import type { HttpApp, InternalClient } from "@th/service-kit";
import { forwardOperation } from "./operation.ts";

/**
 * Webhook endpoints and deliveries: owned by the webhook-dispatcher, reached through its internal
 * API as the authenticated caller. The `webhooks` surface gate answers 403 with `upgrade_url` on
 * Starter.
 */
export function registerWebhookRoutes(app: HttpApp, deps: { dispatcher: InternalClient }): void {
  for (const operation of webhookOperations) {
    forwardOperation(app, operation, deps.dispatcher);
  }
}
