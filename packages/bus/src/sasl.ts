import { Reader } from "./reader.ts";
import { ScramClient, ScramError, type ScramHash } from "./scram.ts";
import { KafkaSecurityError } from "./security-error.ts";

/**
 * Kafka's SASL exchange on one of the bus's own connections: SaslHandshake v1 names the
 * mechanism, then SaslAuthenticate v1 carries its messages (PLAIN in one, SCRAM in two), the way
 * Kafka's own clients do it since 1.0 and Kafka 4 still requires.
 */

export interface SaslSettings {
  mechanism: "plain" | "scram-sha-256" | "scram-sha-512";
  username: string;
  password: string;
}

/**
 * The one thing the exchange needs of a connection: a request answered in order. The wire
 * module's connection runs this exchange as it opens, so it is named here by shape, not imported.
 */
export interface SaslChannel {
  request(
    apiKey: number,
    apiVersion: number,
    parts: readonly Buffer[],
    timeoutMs?: number,
  ): Promise<Buffer>;
}

const SASL_HANDSHAKE = 17;
const SASL_AUTHENTICATE = 36;

const MECHANISM_NAMES = {
  plain: "PLAIN",
  "scram-sha-256": "SCRAM-SHA-256",
  "scram-sha-512": "SCRAM-SHA-512",
} as const;

const SCRAM_HASHES: Record<string, ScramHash> = {
  "scram-sha-256": "sha256",
  "scram-sha-512": "sha512",
};

function stringField(value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  const out = Buffer.allocUnsafe(2 + bytes.length);
  out.writeInt16BE(bytes.length, 0);
  bytes.copy(out, 2);
  return out;
}

function bytesField(value: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + value.length);
  out.writeInt32BE(value.length, 0);
  value.copy(out, 4);
  return out;
}

/** Decodes a SaslHandshake v1 answer: its error code and the mechanisms the listener enables. */
export function readHandshake(body: Buffer): { error: number; mechanisms: string[] } {
  const reader = new Reader(body);
  const error = reader.int16();
  const count = reader.int32();
  const mechanisms: string[] = [];
  for (let index = 0; index < count; index++) {
    mechanisms.push(reader.string());
  }
  return { error, mechanisms };
}

/** Decodes a SaslAuthenticate v1 answer. */
export function readAuthenticate(body: Buffer): {
  error: number;
  message: string | null;
  bytes: Buffer;
  lifetimeMs: number;
} {
  const reader = new Reader(body);
  const error = reader.int16();
  const messageLength = reader.int16();
  let message: string | null = null;
  if (messageLength >= 0) {
    message = body.toString("utf8", reader.pos, reader.pos + messageLength);
    reader.pos += messageLength;
  }
  const length = reader.int32();
  const bytes = length > 0 ? body.subarray(reader.pos, reader.pos + length) : Buffer.alloc(0);
  reader.pos += Math.max(0, length);
  const lifetimeMs = reader.pos + 8 <= body.length ? Number(reader.int64()) : 0;
  return { error, message, bytes, lifetimeMs };
}

/**
 * Authenticates `connection` as `sasl.username`; resolves with the session lifetime the broker
 * granted (0 for unlimited). Refusals are `KafkaSecurityError`s naming the setting to fix.
 */
export async function authenticate(
  connection: SaslChannel,
  sasl: SaslSettings,
  where: string,
  timeoutMs: number,
): Promise<number> {
  const mechanism = MECHANISM_NAMES[sasl.mechanism];
  const handshake = readHandshake(
    await connection.request(SASL_HANDSHAKE, 1, [stringField(mechanism)], timeoutMs),
  );
  if (handshake.error === 33) {
    throw new KafkaSecurityError(
      "KAFKA_SASL_MECHANISM",
      `${where} does not enable ${mechanism} (it enables ${handshake.mechanisms.join(", ") || "none"}; UNSUPPORTED_SASL_MECHANISM)`,
    );
  }
  if (handshake.error !== 0) {
    throw new KafkaSecurityError(
      "KAFKA_SASL_MECHANISM",
      `${where} refused the SASL handshake (error ${handshake.error}${handshake.error === 34 ? ", ILLEGAL_SASL_STATE: is it a listener without SASL?" : ""})`,
    );
  }
  const send = async (message: Buffer) => {
    const answer = readAuthenticate(
      await connection.request(SASL_AUTHENTICATE, 1, [bytesField(message)], timeoutMs),
    );
    if (answer.error === 58) {
      throw new KafkaSecurityError(
        "KAFKA_SASL_PASSWORD",
        `${where} refused user "${sasl.username}" with ${mechanism}: wrong user name or password (SASL_AUTHENTICATION_FAILED)`,
      );
    }
    if (answer.error !== 0) {
      throw new KafkaSecurityError(
        "KAFKA_SASL_MECHANISM",
        `${where} refused ${mechanism} authentication (error ${answer.error})`,
      );
    }
    return answer;
  };
  if (sasl.mechanism === "plain") {
    // authzid, authcid and password, separated by NUL (RFC 4616); no authzid.
    const answer = await send(Buffer.from(`\u0000${sasl.username}\u0000${sasl.password}`, "utf8"));
    return answer.lifetimeMs;
  }
  const scram = new ScramClient(
    sasl.username,
    sasl.password,
    SCRAM_HASHES[sasl.mechanism] as ScramHash,
  );
  try {
    const serverFirst = await send(Buffer.from(scram.first(), "utf8"));
    const serverFinal = await send(
      Buffer.from(scram.final(serverFirst.bytes.toString("utf8")), "utf8"),
    );
    scram.verify(serverFinal.bytes.toString("utf8"));
    return serverFinal.lifetimeMs;
  } catch (error) {
    if (error instanceof ScramError) {
      throw new KafkaSecurityError("KAFKA_SASL_MECHANISM", `${where}: ${error.message}`);
    }
    throw error;
  }
}
