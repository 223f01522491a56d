import { type LookupAddress, lookup } from "node:dns";
import type { LookupFunction } from "node:net";
import { Agent, type Dispatcher } from "undici";
import type { AddressPolicy } from "../domain/address.ts";
import { BLOCKED_AT_CONNECT, networkReasonOf } from "../domain/failure.ts";
import type { AttemptResult } from "../domain/schedule.ts";
import { parseTarget, refusalFor, type Target, targetOf } from "../domain/target.ts";

export const USER_AGENT = "terminal-house-webhooks/1.0";

class BlockedAddressError extends Error {
  readonly code = "EBLOCKED";
}

/**
 * Resolves a name and answers its addresses only when every one of them may be reached: the one
 * check a subscription and every connection make. The refusal never names the addresses, so
 * neither answer says what a name resolves to inside the network.
 */
function resolvePublic(
  hostname: string,
  protocol: string,
  policy: AddressPolicy,
  callback: (error: Error | null, addresses: LookupAddress[]) => void,
): void {
  lookup(hostname, { all: true, verbatim: true }, (error, addresses: LookupAddress[]) => {
    if (error) {
      callback(error, []);
      return;
    }
    if (
      addresses.length === 0 ||
      addresses.some((address) => refusalFor(protocol, address.address, policy) !== null)
    ) {
      callback(new BlockedAddressError(BLOCKED_AT_CONNECT), []);
      return;
    }
    callback(null, addresses);
  });
}

/**
 * Why a URL may not be an endpoint, or null: the URL read as every delivery reads it, and its
 * host resolved now (again at every connection). A name that does not resolve and one that
 * resolves to an address that is not public get the same answer, so subscribing cannot be used
 * to ask which internal names exist.
 */
export async function refuseEndpointUrl(
  raw: string,
  policy: AddressPolicy,
): Promise<string | null> {
  const target = targetOf(raw, policy);
  if (target.kind === "refused") {
    return target.reason;
  }
  if (target.literal) {
    return null;
  }
  const resolved = await new Promise<boolean>((resolve) =>
    resolvePublic(target.host, target.protocol, policy, (error) => resolve(error === null)),
  );
  return resolved ? null : `url host ${target.host} must resolve to public addresses only`;
}

/**
 * A DNS lookup that refuses a name resolving to an address the policy does not allow: run inside
 * the socket's connect, so the address connected to is the address checked.
 */
function guardedLookup(protocol: string, policy: AddressPolicy): LookupFunction {
  return ((
    hostname: string,
    lookupOptions: { all?: boolean },
    callback: (...args: unknown[]) => void,
  ) => {
    resolvePublic(hostname, protocol, policy, (error, addresses) => {
      if (error) {
        callback(error);
      } else if (lookupOptions?.all) {
        callback(null, addresses);
      } else {
        const first = addresses[0] as LookupAddress;
        callback(null, first.address, first.family);
      }
    });
  }) as LookupFunction;
}

/**
 * Posts one body to a target through `agent` and answers the attempt's result: the receiver's
 * status, or the coarse reason it failed (a timeout, the network, a refused address). The answer's
 * body is read to its end, so the connection can be kept, and dropped unread.
 */
function post(
  agent: Dispatcher,
  target: Target,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    let controller: Dispatcher.DispatchController | undefined;
    const finish = (result: AttemptResult) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(result);
      }
    };
    const timer = setTimeout(() => {
      finish({
        kind: "failure",
        failure: "timeout",
        error: `no response within ${timeoutMs} ms`,
        durationMs: elapsed(),
      });
      // A request still waiting for a connection has no controller yet; it is aborted when it
      // gets one.
      controller?.abort(new Error("attempt timed out"));
    }, timeoutMs);
    let status = 0;
    agent.dispatch(
      { origin: target.origin, path: target.path, method: "POST", headers, body },
      {
        onRequestStart(started) {
          controller = started;
          if (settled) {
            started.abort(new Error("attempt timed out"));
          }
        },
        onResponseStart(_controller, statusCode) {
          // Informational answers (1xx) come before the final one.
          status = statusCode;
        },
        onResponseData() {},
        onResponseEnd() {
          finish({ kind: "response", status, durationMs: elapsed() });
        },
        onResponseError(_controller, error: Error & { code?: string; cause?: unknown }) {
          if (status !== 0) {
            // The answer's status arrived and its body broke off: still the receiver's answer.
            finish({ kind: "response", status, durationMs: elapsed() });
            return;
          }
          const blocked =
            error instanceof BlockedAddressError ||
            error.code === "EBLOCKED" ||
            error.cause instanceof BlockedAddressError;
          finish({
            kind: "failure",
            failure: blocked ? "blocked_address" : "network",
            error: blocked ? BLOCKED_AT_CONNECT : networkReasonOf(error),
            durationMs: elapsed(),
          });
        },
      },
    );
  });
}

/**
 * Posts one attempt. The address check runs inside the socket's DNS lookup, so the address
 * connected to is the address checked: a name that re-binds to a private address between
 * subscribe time and delivery (or between two lookups) is refused. Redirects are not followed.
 * Requests go through undici's connection pools (HTTP/1.1, keep-alive): its client costs a
 * fraction of `node:http`'s CPU per request, the largest part of what a delivery costs here.
 */
export function createSender(options: {
  policy: AddressPolicy;
  timeoutMs: number;
  /** Connections per receiver origin; the tenants' concurrency caps bound them before this does. */
  maxSockets?: number;
}) {
  const agentFor = (protocol: "http:" | "https:") =>
    new Agent({
      connections: options.maxSockets ?? 256,
      // Receivers are HTTP/1.1 endpoints; one request per connection at a time.
      allowH2: false,
      pipelining: 1,
      connect: { lookup: guardedLookup(protocol, options.policy), timeout: options.timeoutMs },
      // The attempt's own timer bounds the whole request; these only must not fire first.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  const agents = { "http:": agentFor("http:"), "https:": agentFor("https:") } as const;

  /** Parsed endpoint URLs and their literal-address verdicts, kept across attempts. */
  const targets = new Map<string, Target | AttemptResult>();
  function targetOf(rawUrl: string): Target | AttemptResult {
    const known = targets.get(rawUrl);
    if (known) {
      return known;
    }
    const target = parseTarget(rawUrl, options.policy);
    if (targets.size >= 10_000) {
      targets.clear();
    }
    targets.set(rawUrl, target);
    return target;
  }

  return {
    send(rawUrl: string, body: string, headers: Record<string, string>): Promise<AttemptResult> {
      const target = targetOf(rawUrl);
      if (target.kind !== "target") {
        return Promise.resolve(target);
      }
      return post(agents[target.protocol], target, body, headers, options.timeoutMs);
    },
    close() {
      agents["http:"].destroy().catch(() => {});
      agents["https:"].destroy().catch(() => {});
    },
  };
}

export type Sender = ReturnType<typeof createSender>;
