import { type AddressPolicy, isIpLiteral, refusalOf } from "./address.ts";
import type { AttemptResult } from "./schedule.ts";

/** Where an endpoint URL points, parsed once. */
export interface Target {
  kind: "target";
  protocol: "http:" | "https:";
  origin: string;
  path: string;
}

/** Plain HTTP is only ever allowed to loopback, and only with the development flag. */
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
 * Where an endpoint URL sends its attempts, or the failed attempt it is: a URL that does not
 * parse, a scheme the policy refuses, or a literal address that may not be reached. A host
 * name is checked when it is resolved, at every connection.
 */
export function parseTarget(rawUrl: string, policy: AddressPolicy): Target | AttemptResult {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { kind: "failure", failure: "other", error: "invalid url", durationMs: 0 };
  }
  const protocol = url.protocol;
  if (
    (protocol !== "http:" && protocol !== "https:") ||
    (protocol === "http:" && !policy.allowLoopback)
  ) {
    return {
      kind: "failure",
      failure: "blocked_address",
      error: "url must use https",
      durationMs: 0,
    };
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIpLiteral(host)) {
    const refusal = refusalFor(protocol, host, policy);
    if (refusal) {
      return { kind: "failure", failure: "blocked_address", error: refusal, durationMs: 0 };
    }
  }
  return {
    kind: "target",
    protocol,
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
  };
}
