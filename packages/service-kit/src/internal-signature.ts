import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

// The pure half of signed internal calls (decision 0320): what is signed, how it is written in a
// header, and the memory of nonces that refuses a replay. No I/O here.

/** Headers of a signed internal call, beside the identity headers it covers. */
export const SIGNED_CALL_HEADERS = {
  caller: "x-th-caller",
  signature: "x-th-signature",
  /** The receiver's route pattern the caller means to reach (`/internal/v1/parcels/by-folio/:folio`). */
  route: "x-th-route",
  /** SHA-256 of the body bytes, hex; of the empty string when there is none. */
  bodyDigest: "x-th-body-sha256",
} as const;

/** Everything a signature covers. */
export interface SignedCall {
  caller: string;
  receiver: string;
  /** Unix milliseconds when it was signed. */
  at: number;
  nonce: string;
  method: string;
  route: string;
  /** The path and query as sent to the receiver. */
  target: string;
  bodyDigest: string;
  tenantId: string;
  memberId: string;
  keyId: string;
  tier: string;
}

const EMPTY_DIGEST = createHash("sha256").update("").digest("hex");

/** The hex SHA-256 of a body, the empty one's when there is none. */
export function bodyDigestOf(body: string | undefined): string {
  return body === undefined || body.length === 0
    ? EMPTY_DIGEST
    : createHash("sha256").update(body).digest("hex");
}

/** One field per line: no field may hold a newline, so no two calls share a message. */
function messageOf(call: SignedCall): string {
  return [
    "th-internal-v1",
    call.caller,
    call.receiver,
    call.at,
    call.nonce,
    call.method.toUpperCase(),
    call.route,
    call.target,
    call.bodyDigest,
    call.tenantId,
    call.memberId,
    call.keyId,
    call.tier,
  ].join("\n");
}

function macOf(key: string, call: SignedCall): string {
  return createHmac("sha256", key).update(messageOf(call)).digest("hex");
}

/** The `x-th-signature` value: `t=<ms>,n=<nonce>,v1=<hex>`. */
export function signatureHeader(key: string, call: SignedCall): string {
  return `t=${call.at},n=${call.nonce},v1=${macOf(key, call)}`;
}

export interface ParsedSignature {
  at: number;
  nonce: string;
  mac: string;
}

/** The parts of an `x-th-signature` value; undefined when it is not exactly that shape. */
export function parseSignatureHeader(value: string): ParsedSignature | undefined {
  const match = /^t=(\d{1,16}),n=([\w-]{8,64}),v1=([0-9a-f]{64})$/.exec(value);
  if (!match) {
    return undefined;
  }
  return { at: Number(match[1]), nonce: match[2] as string, mac: match[3] as string };
}

/** Whether `mac` is the signature of `call` under `key`, compared in constant time. */
export function macMatches(key: string, call: SignedCall, mac: string): boolean {
  const expected = Buffer.from(macOf(key, call), "hex");
  const presented = Buffer.from(mac, "hex");
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

// Nonces need to be unique, not secret: a random prefix per process and a counter.
const NONCE_PREFIX = randomBytes(8).toString("hex");
let nonceSequence = 0;

export function nextNonce(): string {
  nonceSequence++;
  return `${NONCE_PREFIX}${nonceSequence.toString(36)}`;
}

/**
 * The nonces seen recently, so a captured call replayed while its timestamp is still fresh is
 * refused. A call is fresh within `windowMs` either side of now, so a nonce first seen at `s`
 * could come back until `s + 2 × windowMs`; two generations that rotate every `2 × windowMs`
 * remember every nonce at least that long.
 */
export class NonceMemory {
  #current = new Set<string>();
  #previous = new Set<string>();
  #rotatedAt: number;
  readonly #periodMs: number;

  constructor(windowMs: number, now: number) {
    this.#periodMs = 2 * windowMs;
    this.#rotatedAt = now;
  }

  /** Remembers the nonce; false when it was already seen (a replay). */
  firstSight(nonce: string, now: number): boolean {
    const elapsed = now - this.#rotatedAt;
    if (elapsed >= this.#periodMs) {
      this.#previous = elapsed >= 2 * this.#periodMs ? new Set() : this.#current;
      this.#current = new Set();
      this.#rotatedAt = now;
    }
    if (this.#current.has(nonce) || this.#previous.has(nonce)) {
      return false;
    }
    this.#current.add(nonce);
    return true;
  }
}
