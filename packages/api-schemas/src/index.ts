// Public REST resources, one module per resource, and the table of public operations built on
// them (`operations/`): the gateway publishes and forwards each operation and the owning service
// binds its internal route to the same entry, so the two never drift.

export * from "./lead.ts";
export * from "./operations/index.ts";
export * from "./pipeline.ts";
export * from "./recipe.ts";
export * from "./team.ts";
export * from "./watchlist.ts";
export * from "./webhook-event.ts";
