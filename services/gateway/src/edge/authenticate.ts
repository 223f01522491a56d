import type { HttpApp } from "@th/service-kit";
import { createAdmission } from "./admission.ts";
import { billingPeriods } from "./billing-periods.ts";
import { refuseUnreadMediaTypes, registerBodySearch } from "./body-search.ts";
import { createClientLimits } from "./client-limits.ts";
import type { EdgeOptions } from "./edge-options.ts";
import { edgePathOf, passesEdge, urlHoldsKey } from "./edge-paths.ts";
import { createKeyAuthentication } from "./key-authentication.ts";
import { registerLimitHeaders } from "./limit-headers-hook.ts";
import { createSessionAuthentication } from "./session-authentication.ts";

export type { QuotaState } from "./edge-context.ts";
export { tenancyOf } from "./edge-context.ts";
export { CSRF_HEADER } from "./session-authentication.ts";
export { quotaUpgradeUrlFor } from "./tier-gate.ts";

const KEY_IN_URL =
  "an API key must never be sent in the URL or query string; send it as Authorization: Bearer <key>, and revoke this key";

/**
 * The authenticated edge: every `/v1` request passes here before its route. A key is accepted
 * only as `Authorization: Bearer`; a key-shaped string anywhere in the URL or body is refused
 * with 401 whatever else the request carries. One Redis round trip resolves the key and charges
 * the tenant's rolling minute; the tier gate and the six limit headers follow from the answer.
 */
export function registerEdge(app: HttpApp, options: EdgeOptions): void {
  const now = options.now ?? (() => Date.now());
  const periods = billingPeriods();
  const limits = createClientLimits(options, now);
  const admit = createAdmission(options, now, periods);
  const authenticateKey = createKeyAuthentication(options, now, limits.refuse);
  const sessions = options.sessions;
  const admitSession = sessions
    ? createSessionAuthentication({ store: options.store, sessions }, now, limits.refuse, admit)
    : undefined;

  app.addHook("onRequest", async (request) => {
    if (!passesEdge(request)) {
      return;
    }
    const config = request.routeOptions.config?.edge ?? {};
    if (urlHoldsKey(request.url)) {
      await limits.refuse(request, KEY_IN_URL);
    }
    if (config.public) {
      return limits.admitPublic(request);
    }
    const header = request.headers.authorization;
    if (!header && sessions && admitSession && edgePathOf(request).startsWith("/v1/")) {
      const claims = sessions.read(request);
      if (claims === "invalid") {
        await limits.refuse(
          request,
          "the dashboard session has expired; refresh it or sign in again",
        );
      } else if (claims) {
        return admitSession(request, claims, config);
      }
    }
    admit(request, await authenticateKey(request, header), config);
  });

  registerBodySearch(app, limits.refuse);
  refuseUnreadMediaTypes(app);
  registerLimitHeaders(app, { remainingLeadViews: options.remainingLeadViews, periods, now });
}
