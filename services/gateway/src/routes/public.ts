import { contactSales } from "@th/api-schemas";
import type { HttpApp, InternalClient } from "@th/service-kit";
import { forwardOperation } from "./operation.ts";

/**
 * Endpoints without a key: an Authorization header is ignored; each client IP has its own limit.
 * Trial starts have limits of their own (routes/billing.ts).
 */
export function registerPublicRoutes(app: HttpApp, deps: { keys: InternalClient }): void {
  forwardOperation(app, contactSales, deps.keys);
}
