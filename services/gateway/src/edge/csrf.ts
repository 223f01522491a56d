import { timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { ApiError, type HttpApp } from "@th/service-kit";
import type { EdgeSessions } from "./edge-context.ts";
import { CSRF_HEADER } from "./session-authentication.ts";

/** Fetch Metadata: what the browser says of the page that sent the request. */
const FETCH_SITE_HEADER = "sec-fetch-site";

const REFUSAL =
  "a dashboard read that costs lead-views must carry the session's X-CSRF-Token or come from a page of this origin (Sec-Fetch-Site: same-origin)";

function tokenMatches(sent: string | string[] | undefined, expected: string): boolean {
  if (typeof sent !== "string" || expected === "") {
    return false;
  }
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Whether a session's request proves the dashboard's own page sent it: the session's CSRF token
 * echoed in X-CSRF-Token (which a page of another site cannot read), or the browser's word that
 * a page of this origin sent it. `same-site` is not enough (a sibling subdomain may be anyone's),
 * nor is `none` (a typed or dropped URL), nor a missing header (not a browser this can trust).
 */
export function sentByOwnPage(headers: IncomingHttpHeaders, csrf: string): boolean {
  return headers[FETCH_SITE_HEADER] === "same-origin" || tokenMatches(headers[CSRF_HEADER], csrf);
}

/**
 * A dashboard session's cookie rides along on any request the browser makes to this origin, an
 * `<img src>` or a link on another site included. State-changing calls already need the CSRF
 * token; a read that costs lead-views spends the tenant's quota, so it needs the same proof,
 * GET or not. Decided on the matched route's config (`leadViews`, from the operation table),
 * after the edge admitted the session. API keys are not cookies and are not asked.
 */
export function registerPaidReadCsrf(app: HttpApp, sessions: EdgeSessions): void {
  app.addHook("onRequest", (request, _reply, done) => {
    if (
      !request.edge?.tenancy?.sessionId ||
      request.routeOptions.config?.edge?.leadViews !== true
    ) {
      done();
      return;
    }
    const claims = sessions.read(request);
    if (claims !== null && claims !== "invalid" && sentByOwnPage(request.headers, claims.csrf)) {
      done();
      return;
    }
    done(new ApiError("forbidden", REFUSAL));
  });
}
