import { type AddressPolicy, isIpLiteral, refusalOf } from "./address.ts";
import type { AttemptResult } from "./schedule.ts";

/** Where an endpoint URL points, parsed once. */
export interface Target {
  kind: "target";
  protocol: "http:" | "https:";
  origin: string;
  path: string;
  /** The host without brackets: an IP literal, already checked, or a name checked when resolved. */
  host: string;
  literal: boolean;
}

/** Why a URL may not be an endpoint; `blocked_address` when the address or scheme is refused. */
export interface UrlRefusal {
  kind: "refused";
  failure: "other" | "blocked_address";
  reason: string;
}

/**
 * The one address check, for a literal host and for every address a name resolves to, at
 * subscribe time and at every connection. Plain HTTP is only ever allowed to loopback, and only
 * with the development flag.
 */
export function refusalFor(
  protocol: string,
  address: string,
  policy: AddressPolicy,
): string | null {
  const refusal = refusalOf(address, policy);
  if (refusal) {
    return refusal;
  }
  if (protocol === "http:" && refusalOf(address, { allowLoopback: false }) === null) {
    return `${address} is not loopback; plain http is only allowed to loopback in development`;
  }
  return null;
}

/**
 * The one reading of an endpoint URL, when it is subscribed and at every delivery: an absolute
 * URL without credentials, https (http to loopback only in development), and a literal address
 * that may be reached. WHATWG URL parsing has already turned decimal, octal, hex and short IPv4
 * hosts (`2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`, `127.1`) into dotted decimal and
 * IPv6 into its canonical form, so the check sees the address a socket would reach.
 */
export function targetOf(rawUrl: string, policy: AddressPolicy): Target | UrlRefusal {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { kind: "refused", failure: "other", reason: "url must be an absolute URL" };
  }
  if (url.username || url.password) {
    return { kind: "refused", failure: "other", reason: "url must not carry credentials" };
  }
  const protocol = url.protocol;
  if (
    (protocol !== "http:" && protocol !== "https:") ||
    (protocol === "http:" && !policy.allowLoopback)
  ) {
    return { kind: "refused", failure: "blocked_address", reason: "url must use https" };
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const literal = isIpLiteral(host);
  const refusal = literal ? refusalFor(protocol, host, policy) : null;
  if (refusal) {
    return { kind: "refused", failure: "blocked_address", reason: refusal };
  }
  return {
    kind: "target",
    protocol,
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    host,
    literal,
  };
}

/**
 * Where an endpoint URL sends its attempts, or the failed attempt it is. A host name is checked
 * when it is resolved, at every connection.
 */
export function parseTarget(rawUrl: string, policy: AddressPolicy): Target | AttemptResult {
  const target = targetOf(rawUrl, policy);
  if (target.kind === "target") {
    return target;
  }
  return { kind: "failure", failure: target.failure, error: target.reason, durationMs: 0 };
}
