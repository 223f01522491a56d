// Public REST resources, one module per resource. The gateway declares its routes with these
// and the owning service validates its internal API with the same schemas, so the two never drift.
export const API_SCHEMAS_VERSION = "v1";

export * from "./lead.ts";
export * from "./operations/index.ts";
export * from "./recipe.ts";
export * from "./team.ts";
export * from "./watchlist.ts";
export * from "./webhook-event.ts";
