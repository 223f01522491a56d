// The table of public operations: each is declared once, here. The gateway publishes and forwards
// every entry; the owning service binds its handler to the same entry's request schemas.
import { dashboardKeyOperations } from "./dashboard-keys.ts";
import { exportOperations } from "./export.ts";
import { leadOperations } from "./leads.ts";
import type { Operation, OperationOwner } from "./operation.ts";
import { pipelineOperations } from "./pipeline.ts";
import { passwordOperations, signUpOperations } from "./sign-up.ts";
import { accountOperations, teamOperations } from "./team.ts";
import { watchlistOperations } from "./watchlists.ts";
import { webhookOperations } from "./webhooks.ts";

export * from "./dashboard-keys.ts";
export * from "./export.ts";
export * from "./leads.ts";
export * from "./operation.ts";
export * from "./pipeline.ts";
export * from "./sign-up.ts";
export * from "./team.ts";
export * from "./watchlists.ts";
export * from "./webhooks.ts";

/** Every public operation that the gateway forwards to the service that owns it. */
export const PUBLIC_OPERATIONS = [
  ...passwordOperations,
  ...signUpOperations,
  ...accountOperations,
  ...teamOperations,
  ...dashboardKeyOperations,
  ...leadOperations,
  ...watchlistOperations,
  ...webhookOperations,
  ...exportOperations,
  ...pipelineOperations,
] as const;

/**
 * The operations `owner` holds in the table, and the ids of those it serves no route for at
 * their internal path; each owner's test expects it to own some and serve them all.
 */
export function unservedOperations(
  owner: OperationOwner,
  hasRoute: (route: { method: Operation["method"]; url: string }) => boolean,
): { owned: number; unserved: string[] } {
  const owned = PUBLIC_OPERATIONS.filter((operation) => operation.owner === owner);
  return {
    owned: owned.length,
    unserved: owned
      .filter((operation) => !hasRoute({ method: operation.method, url: operation.internalPath }))
      .map((operation) => operation.operationId),
  };
}
