import { createHmac, timingSafeEqual } from "node:crypto";

/** The headers of a delivery, lower-cased as Node exposes them. */
export const HEADERS = {
  signature: "x-flpf-signature",
  eventType: "x-flpf-event-type",
  webhookId: "x-flpf-webhook-id",
} as const;

export interface VerifyOptions {
  /** Largest accepted distance between `t` and now, in seconds; 300 by default. */
  toleranceSeconds?: number;
  /** Current time in milliseconds; tests pass their own clock. */
  now?: number;
}

export type VerifyResult =
  | { ok: true; timestamp: number; secretIndex: number }
  | {
      ok: false;
      reason: "missing_header" | "malformed_header" | "stale_timestamp" | "bad_signature";
    };

/** `t=<unix seconds>,v1=<hex>[,v1=<hex>…]` → its timestamp and every v1 signature. */
export function parseSignatureHeader(
  header: string | null | undefined,
): { timestamp: number; signatures: string[] } | null {
  if (!header) {
    return null;
  }
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const at = part.indexOf("=");
    if (at <= 0) {
      continue;
    }
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === "t" && /^\d{1,12}$/.test(value)) {
      timestamp = Number(value);
    } else if (key === "v1" && /^[0-9a-f]{64}$/i.test(value)) {
      signatures.push(value.toLowerCase());
    }
  }
  if (timestamp === undefined || signatures.length === 0) {
    return null;
  }
  return { timestamp, signatures };
}

function toBuffer(body: string | Uint8Array): Buffer {
  return typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
}

/** Hex HMAC-SHA-256 of `t + "." + body` under one secret (the whole `whsec_…` string is the key). */
export function signPayload(secret: string, timestamp: number, body: string | Uint8Array): string {
  const hmac = createHmac("sha256", secret).update(`${timestamp}.`);
  // A string body is hashed as UTF-8 directly, without a copy into a Buffer first.
  return (typeof body === "string" ? hmac.update(body, "utf8") : hmac.update(body)).digest("hex");
}

/**
 * The header a sender writes, `t=<unix_seconds>,v1=<hex>`: exactly one signature, under the
 * endpoint's one current secret. (A receiver written from that grammar reads one `v1`; the
 * receiver, not the sender, holds two secrets while it cuts over.)
 */
export function signatureHeader(
  body: string | Uint8Array,
  secret: string,
  timestamp: number = Math.floor(Date.now() / 1000),
): string {
  return `t=${timestamp},v1=${signPayload(secret, timestamp, body)}`;
}

/**
 * Checks a delivery against the raw body bytes. Any `v1` entry that matches any of `secrets`
 * passes, so a receiver accepts both the old and the new secret while it rotates. Comparison is
 * constant-time; the timestamp must lie within `toleranceSeconds` (300) of now.
 */
export function verifySignature(
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secrets: readonly string[],
  options: VerifyOptions = {},
): VerifyResult {
  if (header === undefined || header === null || header === "") {
    return { ok: false, reason: "missing_header" };
  }
  const parsed = parseSignatureHeader(header);
  if (!parsed) {
    return { ok: false, reason: "malformed_header" };
  }
  const tolerance = options.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - parsed.timestamp) > tolerance) {
    return { ok: false, reason: "stale_timestamp" };
  }
  const body = toBuffer(rawBody);
  let matched = -1;
  // Every pair is compared, so the time taken does not reveal which secret or entry matched.
  secrets.forEach((secret, index) => {
    const expected = Buffer.from(signPayload(secret, parsed.timestamp, body), "hex");
    for (const candidate of parsed.signatures) {
      if (timingSafeEqual(expected, Buffer.from(candidate, "hex")) && matched < 0) {
        matched = index;
      }
    }
  });
  return matched >= 0
    ? { ok: true, timestamp: parsed.timestamp, secretIndex: matched }
    : { ok: false, reason: "bad_signature" };
}
