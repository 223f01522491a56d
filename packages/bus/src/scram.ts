import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * The client side of SCRAM (RFC 5802; SHA-256 and SHA-512 as RFC 7677 and Kafka use them): pure
 * message building and checking, no I/O. Kafka runs it without channel binding ("n,,") and
 * without SASLprep; the password is used as its UTF-8 bytes, as Kafka's own clients do.
 */

export type ScramHash = "sha1" | "sha256" | "sha512";

/** A SCRAM exchange that cannot go on; the message never holds the password or a key. */
export class ScramError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ScramError";
  }
}

/** Kafka refuses fewer iterations itself; fewer from a server would make a stolen proof cheap. */
const MIN_ITERATIONS = 4096;
/** More would stall the event loop for seconds on a hostile or broken server's word. */
const MAX_ITERATIONS = 1_000_000;

function saslName(name: string): string {
  return name.replaceAll("=", "=3D").replaceAll(",", "=2C");
}

function attributesOf(message: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const part of message.split(",")) {
    const separator = part.indexOf("=");
    if (separator !== 1) {
      throw new ScramError(`malformed SCRAM message attribute "${part.slice(0, 20)}"`);
    }
    attributes.set(part.slice(0, 1), part.slice(2));
  }
  return attributes;
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(a.length);
  for (let index = 0; index < a.length; index++) {
    out[index] = (a[index] as number) ^ (b[index] as number);
  }
  return out;
}

const HASH_BYTES: Record<ScramHash, number> = { sha1: 20, sha256: 32, sha512: 64 };

export class ScramClient {
  readonly #username: string;
  readonly #password: string;
  readonly #hash: ScramHash;
  readonly #nonce: string;
  #clientFirstBare = "";
  #serverSignature: Buffer | undefined;

  /** `nonce` is for tests with published vectors; otherwise 24 random bytes. */
  constructor(username: string, password: string, hash: ScramHash, nonce?: string) {
    this.#username = username;
    this.#password = password;
    this.#hash = hash;
    this.#nonce = nonce ?? randomBytes(24).toString("base64");
  }

  /** client-first-message: no channel binding, no authorization identity. */
  first(): string {
    this.#clientFirstBare = `n=${saslName(this.#username)},r=${this.#nonce}`;
    return `n,,${this.#clientFirstBare}`;
  }

  /** client-final-message answering the server-first-message, with the client proof. */
  final(serverFirst: string): string {
    if (!this.#clientFirstBare) {
      throw new ScramError("SCRAM: first() must come before final()");
    }
    const attributes = attributesOf(serverFirst);
    if (attributes.has("m")) {
      throw new ScramError("SCRAM: the server asked for an extension this client does not know");
    }
    const nonce = attributes.get("r") ?? "";
    const salt = Buffer.from(attributes.get("s") ?? "", "base64");
    const iterations = Number(attributes.get("i"));
    if (!nonce.startsWith(this.#nonce) || nonce.length <= this.#nonce.length) {
      throw new ScramError("SCRAM: the server's nonce does not extend the client's");
    }
    if (salt.length === 0) {
      throw new ScramError("SCRAM: the server sent no salt");
    }
    if (
      !Number.isInteger(iterations) ||
      iterations < MIN_ITERATIONS ||
      iterations > MAX_ITERATIONS
    ) {
      throw new ScramError(
        `SCRAM: the server's iteration count ${attributes.get("i")} is outside ${MIN_ITERATIONS}..${MAX_ITERATIONS}`,
      );
    }
    const salted = pbkdf2Sync(
      Buffer.from(this.#password, "utf8"),
      salt,
      iterations,
      HASH_BYTES[this.#hash],
      this.#hash,
    );
    const clientKey = createHmac(this.#hash, salted).update("Client Key").digest();
    const storedKey = createHash(this.#hash).update(clientKey).digest();
    const withoutProof = `c=biws,r=${nonce}`;
    const authMessage = `${this.#clientFirstBare},${serverFirst},${withoutProof}`;
    const clientSignature = createHmac(this.#hash, storedKey).update(authMessage).digest();
    const serverKey = createHmac(this.#hash, salted).update("Server Key").digest();
    this.#serverSignature = createHmac(this.#hash, serverKey).update(authMessage).digest();
    return `${withoutProof},p=${xor(clientKey, clientSignature).toString("base64")}`;
  }

  /** Checks the server-final-message: the server proves it knew the password too. */
  verify(serverFinal: string): void {
    if (!this.#serverSignature) {
      throw new ScramError("SCRAM: final() must come before verify()");
    }
    const attributes = attributesOf(serverFinal);
    const error = attributes.get("e");
    if (error !== undefined) {
      throw new ScramError(`SCRAM: the server refused: ${error}`);
    }
    const signature = Buffer.from(attributes.get("v") ?? "", "base64");
    if (
      signature.length !== this.#serverSignature.length ||
      !timingSafeEqual(signature, this.#serverSignature)
    ) {
      throw new ScramError(
        "SCRAM: the server's signature is wrong (it does not know the password)",
      );
    }
  }
}
