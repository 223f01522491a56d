// What every page knows about the signed-in member and their tenant, in a module of its own so
// the app shell and its pages both import it without importing each other.
import type { Schemas } from "./api.ts";

/** The signed-in member, their tenant and the session's times, as the API answers them. */
export type Session = Schemas["DashboardSession"];

export type Tier = Session["tenant"]["tier"];

export const TIER_LABELS: Readonly<Record<Tier, string>> = {
  starter: "Starter",
  operator: "Operator",
  team: "Team",
  custom: "Custom",
};
