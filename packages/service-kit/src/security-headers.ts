import type { HttpApp } from "./app.ts";

/** One year, subdomains included: what browsers' preload lists ask of a site (RFC 6797). */
export const HSTS = "max-age=31536000; includeSubDomains";

/**
 * What an answer that sets no policy of its own may do in a browser: nothing. An HTML page
 * (the dashboard, the API's docs) sets the policy it needs instead.
 */
export const NO_CONTENT_POLICY = "default-src 'none'; frame-ancestors 'none'";

export interface SecurityHeaderOptions {
  /**
   * Strict-Transport-Security on every answer: the public origin is HTTPS. Browsers ignore it
   * on an answer that reached them over plain HTTP, so it never locks a development origin.
   */
  hsts: boolean;
}

/**
 * Headers every answer carries: no content-type sniffing (a JSON body is never run as a script
 * or rendered as HTML), no framing (clickjacking), no content policy unless the answer sets its
 * own, and HSTS where the public origin is HTTPS.
 */
export function securityHeaders(options: SecurityHeaderOptions): Record<string, string> {
  return {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": NO_CONTENT_POLICY,
    ...(options.hsts ? { "strict-transport-security": HSTS } : {}),
  };
}

const secured = new WeakSet<HttpApp>();

/**
 * Sets the security headers on every answer the app sends: routes, errors, unknown paths and
 * static files. An answer that set a Content-Security-Policy of its own keeps it. Registering twice keeps the first registration's options, so a service that
 * chose its own (the gateway's HSTS setting) is not overridden by `runService`'s default. Routes
 * that write the raw response themselves set `securityHeaders(...)` there.
 */
export function registerSecurityHeaders(app: HttpApp, options: SecurityHeaderOptions): void {
  if (secured.has(app)) {
    return;
  }
  secured.add(app);
  const { "content-security-policy": policy, ...always } = securityHeaders(options);
  app.addHook("onSend", (_request, reply, payload, done) => {
    reply.headers(always);
    if (!reply.hasHeader("content-security-policy")) {
      reply.header("content-security-policy", policy);
    }
    done(null, payload);
  });
}
