import { type LookupAddress, lookup } from "node:dns";
import { lookup as lookupAsync } from "node:dns/promises";
import type { LookupFunction } from "node:net";
import { Agent, type Dispatcher } from "undici";
import { type AddressPolicy, isIpLiteral } from "../domain/address.ts";
import type { AttemptResult } from "../domain/schedule.ts";
import { parseTarget, refusalFor, type Target } from "../domain/target.ts";

export const USER_AGENT = "terminal-house-webhooks/1.0";
const EXCERPT_BYTES = 1024;

export class BlockedAddressError extends Error {
  readonly code = "EBLOCKED";
}

/** Why a URL may not be an endpoint, or null. Resolves the host now (again at every delivery). */
export async function refuseEndpointUrl(
  raw: string,
  policy: AddressPolicy,
): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "url must be an absolute URL";
  }
  if (url.username || url.password) {
    return "url must not carry credentials";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowLoopback)) {
    return "url must use https";
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  if (isIpLiteral(host)) {
    addresses = [host];
  } else {
    try {
      addresses = (await lookupAsync(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      return `url host ${host} does not resolve`;
    }
  }
  for (const address of addresses) {
    const refusal = refusalFor(url.protocol, address, policy);
    if (refusal) {
      return `url host ${host} resolves to a refused address: ${refusal}`;
    }
  }
  return null;
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
    lookup(hostname, { all: true, verbatim: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error);
        return;
      }
      for (const address of addresses) {
        const refusal = refusalFor(protocol, address.address, policy);
        if (refusal) {
          callback(
            new BlockedAddressError(`${hostname} resolves to a refused address: ${refusal}`),
          );
          return;
        }
      }
      if (lookupOptions?.all) {
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
 * status with an excerpt of its body, or why it failed (a timeout, the network, a refused address).
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
    let excerpt: Buffer[] = [];
    let kept = 0;
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
          excerpt = [];
          kept = 0;
        },
        onResponseData(_controller, chunk: Buffer) {
          if (kept < EXCERPT_BYTES) {
            excerpt.push(chunk);
            kept += chunk.length;
          }
        },
        onResponseEnd() {
          finish({
            kind: "response",
            status,
            durationMs: elapsed(),
            excerpt: Buffer.concat(excerpt).subarray(0, EXCERPT_BYTES).toString("utf8"),
          });
        },
        onResponseError(_controller, error: Error & { code?: string; cause?: unknown }) {
          if (status !== 0) {
            // The answer's status arrived and its body broke off: still the receiver's answer.
            finish({
              kind: "response",
              status,
              durationMs: elapsed(),
              excerpt: Buffer.concat(excerpt).subarray(0, EXCERPT_BYTES).toString("utf8"),
            });
            return;
          }
          const blocked =
            error instanceof BlockedAddressError ||
            error.code === "EBLOCKED" ||
            error.cause instanceof BlockedAddressError;
          finish({
            kind: "failure",
            failure: blocked ? "blocked_address" : "network",
            error: `${error.code ?? "error"}: ${error.message}`.slice(0, 500),
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
