import { createHash } from "node:crypto";
import { z } from "zod";

/**
 * The services that call other services' internal APIs. Each holds a signing root of its own;
 * a receiver holds, per caller it accepts, only the key derived for itself (decision 0320).
 */
export const INTERNAL_CALLERS = ["gateway", "webhook-dispatcher"] as const;
export type InternalCallerName = (typeof INTERNAL_CALLERS)[number];

/** Development-only signing roots, refused in production. */
export const DEV_INTERNAL_SIGNING_SECRETS: Readonly<Record<InternalCallerName, string>> = {
  gateway: "dev-internal-signing-gateway-not-for-production",
  "webhook-dispatcher": "dev-internal-signing-dispatcher-not-for-production",
};

const MIN_SECRET_LENGTH = 32;

/**
 * The key a caller signs its calls to one receiver with: SHA-256 of `root:receiver`, in hex.
 * A receiver that leaks it leaks calls to itself only; a chart can derive it (`sha256sum`).
 */
export function internalCallerKey(root: string, receiver: string): string {
  return createHash("sha256").update(`${root}:${receiver}`).digest("hex");
}

/** `caller:key,caller:key` as a map; undefined when malformed or naming a caller twice. */
export function parseInternalCallerKeys(text: string): Map<string, string> | undefined {
  const keys = new Map<string, string>();
  for (const entry of text.split(",")) {
    const separator = entry.indexOf(":");
    const caller = entry.slice(0, separator).trim();
    const key = entry.slice(separator + 1).trim();
    if (separator <= 0 || key.length < MIN_SECRET_LENGTH || keys.has(caller)) {
      return undefined;
    }
    keys.set(caller, key);
  }
  return keys;
}

/** The receiver's `INTERNAL_CALLER_KEYS` in development: derived from the dev signing roots. */
export function devInternalCallerKeys(
  receiver: string,
  callers: readonly InternalCallerName[],
): string {
  return callers
    .map(
      (caller) => `${caller}:${internalCallerKey(DEV_INTERNAL_SIGNING_SECRETS[caller], receiver)}`,
    )
    .join(",");
}

/** A caller's own signing root. */
export function internalSigningSecret(caller: InternalCallerName) {
  return z.string().min(MIN_SECRET_LENGTH).default(DEV_INTERNAL_SIGNING_SECRETS[caller]);
}

/** The keys of the callers a receiver accepts, each naming one of `callers`. */
export function internalCallerKeys(receiver: string, callers: readonly InternalCallerName[]) {
  return z
    .string()
    .default(devInternalCallerKeys(receiver, callers))
    .refine(
      (text) => {
        const keys = parseInternalCallerKeys(text);
        return (
          keys !== undefined && [...keys.keys()].every((name) => callers.includes(name as never))
        );
      },
      {
        message: `must be comma-separated caller:key pairs (keys of ${MIN_SECRET_LENGTH}+ characters) for callers among ${callers.join(", ")}`,
      },
    );
}
