import {
  DEV_INTERNAL_SIGNING_SECRETS,
  type InternalCallerName,
  internalCallerKey,
} from "@th/config";
import { declaredRouteOf, type HttpApp } from "./app.ts";
import { INTERNAL_HEADERS } from "./internal-api.ts";
import {
  bodyDigestOf,
  nextNonce,
  SIGNED_CALL_HEADERS,
  signatureHeader,
} from "./internal-signature.ts";

export interface TestCall {
  method: string;
  url: string;
  /** Sent as JSON: signed as `JSON.stringify` writes it, which is how `inject` sends it. */
  body?: unknown;
  /** Identity headers (`x-th-tenant-id` …) and any others; the identity ones are signed. */
  headers?: Record<string, string>;
  /** The route the call means; found among the app's routes when an app is given. */
  route?: string;
  caller?: InternalCallerName;
  /** The caller's signing root: its development one unless given. */
  root?: string;
  /** When it was signed (unix ms): now unless given. */
  at?: number;
}

/**
 * The headers of a call to `receiver`'s internal API signed the way a caller signs it, for tests
 * that call a service directly; with the app, the route is the one the URL reaches there.
 */
export function signedHeaders(
  receiver: string,
  call: TestCall,
  app?: HttpApp,
): Record<string, string> {
  const caller = call.caller ?? "gateway";
  const key = internalCallerKey(call.root ?? DEV_INTERNAL_SIGNING_SECRETS[caller], receiver);
  const path = call.url.split("?", 1)[0] ?? call.url;
  const route = call.route ?? (app ? declaredRouteOf(app, call.method, path) : undefined) ?? path;
  const headers = call.headers ?? {};
  const bodyDigest = bodyDigestOf(call.body === undefined ? undefined : JSON.stringify(call.body));
  return {
    ...headers,
    [SIGNED_CALL_HEADERS.caller]: caller,
    [SIGNED_CALL_HEADERS.route]: route,
    [SIGNED_CALL_HEADERS.bodyDigest]: bodyDigest,
    [SIGNED_CALL_HEADERS.signature]: signatureHeader(key, {
      caller,
      receiver,
      at: call.at ?? Date.now(),
      nonce: nextNonce(),
      method: call.method,
      route,
      target: call.url,
      bodyDigest,
      tenantId: headers[INTERNAL_HEADERS.tenant] ?? "",
      memberId: headers[INTERNAL_HEADERS.member] ?? "",
      keyId: headers[INTERNAL_HEADERS.key] ?? "",
      tier: headers[INTERNAL_HEADERS.tier] ?? "",
    }),
  };
}

/** `inject` options for a signed call to `receiver`'s app. */
export function signedInject(app: HttpApp, receiver: string, call: TestCall) {
  return {
    method: call.method as "GET",
    url: call.url,
    headers: signedHeaders(receiver, call, app),
    ...(call.body !== undefined ? { payload: call.body as object } : {}),
  };
}

/**
 * The path with the characters at these positions (modulo its length) percent-escaped, as an
 * attacker spells a path to slip past a guard that reads the raw URL.
 */
export function percentEscapeAt(
  path: string,
  positions: readonly number[],
  lowerHex: boolean,
): string {
  const characters = [...path];
  for (const position of positions) {
    const index = position % characters.length;
    const character = characters[index] as string;
    if (character.length === 1 && character !== "/") {
      const hex = character.charCodeAt(0).toString(16).padStart(2, "0");
      characters[index] = `%${lowerHex ? hex : hex.toUpperCase()}`;
    }
  }
  return characters.join("");
}
