import { contactSales, startTrial } from "@th/api-schemas";
import type { HttpApp, InternalClient } from "@th/service-kit";
import { forwardOperation } from "./operation.ts";

/** Endpoints without a key: an Authorization header is ignored; each client IP has its own limit. */
export function registerPublicRoutes(app: HttpApp, deps: { keys: InternalClient }): void {
  forwardOperation(app, startTrial, deps.keys);
  forwardOperation(app, contactSales, deps.keys);
}
