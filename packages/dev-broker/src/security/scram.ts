// SCRAM server side (RFC 5802, with the SHA-256/512 variants of RFC 7677 that Kafka offers as
// SCRAM-SHA-256 and SCRAM-SHA-512). Pure functions over strings and buffers, node:crypto only;
// the connection-level state machine lives in sasl.ts.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from "node:crypto";

export type ScramMechanism = "SCRAM-SHA-256" | "SCRAM-SHA-512";

const HASH: Record<ScramMechanism, { name: "sha256" | "sha512"; bytes: number }> = {
  "SCRAM-SHA-256": { name: "sha256", bytes: 32 },
  "SCRAM-SHA-512": { name: "sha512", bytes: 64 },
};

/** Kafka refuses SCRAM credentials with fewer iterations than this (ScramMechanism.minIterations). */
export const MIN_ITERATIONS = 4096;

/** What the server stores per user and mechanism; the password itself is not needed after this. */
export interface ScramCredential {
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

export class ScramError extends Error {}

function hmac(mechanism: ScramMechanism, key: Buffer, data: string | Buffer): Buffer {
  return createHmac(HASH[mechanism].name, key).update(data).digest();
}

function hash(mechanism: ScramMechanism, data: Buffer): Buffer {
  return createHash(HASH[mechanism].name).update(data).digest();
}

/** Hi(password, salt, i) of RFC 5802 is PBKDF2 with the mechanism's HMAC. */
function saltedPassword(
  mechanism: ScramMechanism,
  password: string,
  salt: Buffer,
  iterations: number,
): Buffer {
  const { name, bytes } = HASH[mechanism];
  return pbkdf2Sync(Buffer.from(password, "utf8"), salt, iterations, bytes, name);
}

export function deriveCredential(
  mechanism: ScramMechanism,
  password: string,
  salt: Buffer = randomBytes(16),
  iterations = MIN_ITERATIONS,
): ScramCredential {
  if (iterations < MIN_ITERATIONS) {
    throw new ScramError(`SCRAM iterations must be at least ${MIN_ITERATIONS}`);
  }
  const salted = saltedPassword(mechanism, password, salt, iterations);
  const clientKey = hmac(mechanism, salted, "Client Key");
  return {
    salt,
    iterations,
    storedKey: hash(mechanism, clientKey),
    serverKey: hmac(mechanism, salted, "Server Key"),
  };
}

/** Parses `k=v,k=v` attribute lists; values may contain `=` (base64 padding). */
function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(",")) {
    const eq = part.indexOf("=");
    if (eq !== 1) {
      throw new ScramError(`malformed SCRAM attribute: ${part.slice(0, 20)}`);
    }
    out.set(part.slice(0, 1), part.slice(2));
  }
  return out;
}

/** saslname decoding: `=2C` is `,` and `=3D` is `=`; any other `=` is invalid. */
export function decodeSaslName(value: string): string {
  if (/=(?!2C|3D)/.test(value)) {
    throw new ScramError("invalid username encoding");
  }
  return value.replaceAll("=2C", ",").replaceAll("=3D", "=");
}

export interface ClientFirst {
  gs2Header: string;
  authzid: string | null;
  username: string;
  clientNonce: string;
  /** client-first-message-bare: the part that goes into AuthMessage. */
  bare: string;
}

export function parseClientFirst(message: string): ClientFirst {
  // gs2-header = gs2-cbind-flag "," [ authzid ] ","
  const first = message.indexOf(",");
  const second = first < 0 ? -1 : message.indexOf(",", first + 1);
  if (first < 0 || second < 0) {
    throw new ScramError("malformed SCRAM client-first message");
  }
  const cbind = message.slice(0, first);
  if (cbind !== "n" && cbind !== "y") {
    // p=... asks for channel binding, which Kafka does not offer either.
    throw new ScramError("SCRAM channel binding is not supported");
  }
  const authzField = message.slice(first + 1, second);
  let authzid: string | null = null;
  if (authzField !== "") {
    if (!authzField.startsWith("a=")) {
      throw new ScramError("malformed SCRAM authorization id");
    }
    authzid = decodeSaslName(authzField.slice(2));
  }
  const bare = message.slice(second + 1);
  const attrs = attributes(bare);
  if (attrs.has("m")) {
    throw new ScramError("SCRAM mandatory extensions are not supported");
  }
  const username = attrs.get("n");
  const clientNonce = attrs.get("r");
  if (!bare.startsWith("n=") || username === undefined || !clientNonce) {
    throw new ScramError("SCRAM client-first message needs n= and r=");
  }
  return {
    gs2Header: message.slice(0, second + 1),
    authzid,
    username: decodeSaslName(username),
    clientNonce,
    bare,
  };
}

export function serverFirst(nonce: string, credential: ScramCredential): string {
  return `r=${nonce},s=${credential.salt.toString("base64")},i=${credential.iterations}`;
}

export interface ClientFinal {
  channelBinding: string;
  nonce: string;
  proof: Buffer;
  withoutProof: string;
}

export function parseClientFinal(message: string): ClientFinal {
  const at = message.lastIndexOf(",p=");
  if (at < 0) {
    throw new ScramError("SCRAM client-final message has no proof");
  }
  const withoutProof = message.slice(0, at);
  const attrs = attributes(withoutProof);
  const channelBinding = attrs.get("c");
  const nonce = attrs.get("r");
  if (!withoutProof.startsWith("c=") || channelBinding === undefined || nonce === undefined) {
    throw new ScramError("SCRAM client-final message needs c= and r=");
  }
  return {
    channelBinding,
    nonce,
    proof: Buffer.from(message.slice(at + 3), "base64"),
    withoutProof,
  };
}

/**
 * Checks the client's proof: ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage) must hash to
 * StoredKey. Returns the server-final message (`v=ServerSignature`) on success, null otherwise.
 */
export function verifyClientFinal(
  mechanism: ScramMechanism,
  credential: ScramCredential,
  authMessage: string,
  proof: Buffer,
): string | null {
  const clientSignature = hmac(mechanism, credential.storedKey, authMessage);
  if (proof.length !== clientSignature.length) {
    return null;
  }
  const clientKey = Buffer.alloc(proof.length);
  for (let i = 0; i < proof.length; i++) {
    clientKey[i] = (proof[i] as number) ^ (clientSignature[i] as number);
  }
  if (!timingSafeEqual(hash(mechanism, clientKey), credential.storedKey)) {
    return null;
  }
  return `v=${hmac(mechanism, credential.serverKey, authMessage).toString("base64")}`;
}

/** A printable server nonce (RFC 5802: any printable character except ','). */
export function serverNonce(): string {
  return randomBytes(18).toString("base64");
}
