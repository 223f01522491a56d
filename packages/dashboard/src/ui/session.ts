// What every page knows about the signed-in member and their tenant, in a module of its own so
// the app shell and its pages both import it without importing each other.

export interface Session {
  member: { id: string; email: string; role: "admin" | "member" };
  tenant: { id: string; company: string; tier: Tier };
  csrf_token: string;
  expires_at: string;
  refresh_expires_at: string;
}

export type Tier = "starter" | "operator" | "team" | "custom";

export const TIER_LABELS: Readonly<Record<Tier, string>> = {
  starter: "Starter",
  operator: "Operator",
  team: "Team",
  custom: "Custom",
};
