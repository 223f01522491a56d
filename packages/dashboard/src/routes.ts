/**
 * The dashboard's client-side routes. The gateway answers each with the app's index.html, so a
 * reload or a shared link lands on the right page; everything else under `/v1` and `/mcp` stays
 * the API's.
 */
export const DASHBOARD_ROUTES = [
  "/",
  "/sign-in",
  "/set-password",
  "/overview",
  "/keys",
  "/leads",
  "/watchlists",
  "/pipeline",
  "/pipeline/list",
  "/pipeline/due",
  "/pipeline/item",
  "/webhooks",
  "/team",
  "/plan",
  "/billing",
  "/integrations",
] as const;
