// Server side of Kafka's SASL mechanisms PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: a user store
// and one session object per authentication attempt, fed the tokens a client sends in
// SaslAuthenticate requests. Failures carry the message Kafka itself sends to the client.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import {
  deriveCredential,
  parseClientFinal,
  parseClientFirst,
  type ScramCredential,
  ScramError,
  type ScramMechanism,
  serverFirst,
  serverNonce,
  verifyClientFinal,
} from "./scram.ts";

export const SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

export function isSaslMechanism(value: string): value is SaslMechanism {
  return (SASL_MECHANISMS as readonly string[]).includes(value);
}

/** An authentication that must fail; `message` is what the client is told (error 58). */
export class SaslAuthenticationFailure extends Error {
  /** Why, for the broker's own log only (never sent: it would tell a prober which part was wrong). */
  readonly reason: string;
  constructor(message: string, reason: string) {
    super(message);
    this.reason = reason;
  }
}

function sha256(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/**
 * Users and their credentials. Passwords are kept only as a SHA-256 digest (for PLAIN) and as
 * SCRAM credentials with a random salt per user and mechanism, as Kafka stores them.
 */
export class SaslUserStore {
  private readonly plain = new Map<string, Buffer>();
  private readonly scram = new Map<ScramMechanism, Map<string, ScramCredential>>();
  /** Answers for unknown users so a SCRAM exchange looks the same whether or not the user exists. */
  private readonly decoys = new Map<ScramMechanism, ScramCredential>();

  constructor(users: ReadonlyMap<string, string>) {
    for (const mechanism of ["SCRAM-SHA-256", "SCRAM-SHA-512"] as const) {
      const credentials = new Map<string, ScramCredential>();
      for (const [user, password] of users) {
        credentials.set(user, deriveCredential(mechanism, password));
      }
      this.scram.set(mechanism, credentials);
      this.decoys.set(mechanism, deriveCredential(mechanism, randomBytes(16).toString("hex")));
    }
    for (const [user, password] of users) {
      this.plain.set(user, sha256(password));
    }
  }

  get size(): number {
    return this.plain.size;
  }

  checkPlain(user: string, password: string): boolean {
    const expected = this.plain.get(user);
    // Compare digests in constant time; an unknown user still pays for one digest.
    const given = sha256(password);
    return expected !== undefined && timingSafeEqual(expected, given);
  }

  scramCredential(mechanism: ScramMechanism, user: string): ScramCredential | undefined {
    return this.scram.get(mechanism)?.get(user);
  }

  decoy(mechanism: ScramMechanism): ScramCredential {
    return this.decoys.get(mechanism) as ScramCredential;
  }
}

interface SaslStep {
  /** Bytes for the SaslAuthenticate response (empty when the mechanism has nothing to say). */
  challenge: Buffer;
  /** Set once authentication has succeeded: Kafka's principal, `User:<name>`. */
  principal: string | null;
}

export interface SaslSession {
  step(token: Buffer): SaslStep;
}

/** PLAIN (RFC 4616): one message `authzid NUL authcid NUL passwd`. */
class PlainSession implements SaslSession {
  private readonly users: SaslUserStore;

  constructor(users: SaslUserStore) {
    this.users = users;
  }

  step(token: Buffer): SaslStep {
    const parts = token.toString("utf8").split("\u0000");
    if (parts.length !== 3) {
      throw new SaslAuthenticationFailure(
        "Invalid SASL/PLAIN response: expected 3 tokens",
        "malformed PLAIN message",
      );
    }
    const [authzid, username, password] = parts as [string, string, string];
    if (username === "") {
      throw new SaslAuthenticationFailure(
        "Authentication failed: username not specified",
        "empty username",
      );
    }
    if (password === "") {
      throw new SaslAuthenticationFailure(
        "Authentication failed: password not specified",
        "empty password",
      );
    }
    if (authzid !== "" && authzid !== username) {
      throw new SaslAuthenticationFailure(
        "Authentication failed: Client requested an authorization id that is different from username",
        "authorization id differs from username",
      );
    }
    if (!this.users.checkPlain(username, password)) {
      throw new SaslAuthenticationFailure(
        "Authentication failed: Invalid username or password",
        `PLAIN credentials rejected for user ${username}`,
      );
    }
    return { challenge: Buffer.alloc(0), principal: `User:${username}` };
  }
}

/** SCRAM: client-first → server-first, client-final → server-final. */
class ScramSession implements SaslSession {
  private state:
    | { at: "first" }
    | {
        at: "final";
        username: string;
        known: boolean;
        credential: ScramCredential;
        gs2Header: string;
        nonce: string;
        firstBare: string;
        serverFirst: string;
      }
    | { at: "done" } = { at: "first" };

  private readonly mechanism: ScramMechanism;
  private readonly users: SaslUserStore;

  constructor(mechanism: ScramMechanism, users: SaslUserStore) {
    this.mechanism = mechanism;
    this.users = users;
  }

  private fail(reason: string): never {
    // Kafka's wording for any SCRAM failure (SaslServerAuthenticator): it does not say which
    // part was wrong, and unknown users fail at the same step as a wrong password.
    this.state = { at: "done" };
    throw new SaslAuthenticationFailure(
      `Authentication failed during authentication due to invalid credentials with SASL mechanism ${this.mechanism}`,
      reason,
    );
  }

  step(token: Buffer): SaslStep {
    try {
      return this.advance(token.toString("utf8"));
    } catch (error) {
      if (error instanceof ScramError) {
        this.fail(error.message);
      }
      throw error;
    }
  }

  private advance(message: string): SaslStep {
    const state = this.state;
    if (state.at === "first") {
      const first = parseClientFirst(message);
      if (first.authzid !== null && first.authzid !== first.username) {
        this.state = { at: "done" };
        throw new SaslAuthenticationFailure(
          "Authentication failed: Client requested an authorization id that is different from username",
          "authorization id differs from username",
        );
      }
      const credential = this.users.scramCredential(this.mechanism, first.username);
      const nonce = first.clientNonce + serverNonce();
      const chosen = credential ?? this.users.decoy(this.mechanism);
      const reply = serverFirst(nonce, chosen);
      this.state = {
        at: "final",
        username: first.username,
        known: credential !== undefined,
        credential: chosen,
        gs2Header: first.gs2Header,
        nonce,
        firstBare: first.bare,
        serverFirst: reply,
      };
      return { challenge: Buffer.from(reply, "utf8"), principal: null };
    }
    if (state.at === "final") {
      const final = parseClientFinal(message);
      // RFC 5802 wants the nonce repeated exactly. librdkafka (2.0 at least) prefixes its own
      // nonce once more; Kafka accepts any nonce that ends with the server-first one, and so do
      // we. The proof still covers the whole message.
      if (!final.nonce.endsWith(state.nonce)) {
        this.fail("nonce mismatch");
      }
      if (final.channelBinding !== Buffer.from(state.gs2Header, "utf8").toString("base64")) {
        this.fail("channel binding does not match the gs2 header");
      }
      const authMessage = `${state.firstBare},${state.serverFirst},${final.withoutProof}`;
      const serverFinal = verifyClientFinal(
        this.mechanism,
        state.credential,
        authMessage,
        final.proof,
      );
      if (serverFinal === null || !state.known) {
        this.fail(`${this.mechanism} proof rejected for user ${state.username}`);
      }
      this.state = { at: "done" };
      return { challenge: Buffer.from(serverFinal, "utf8"), principal: `User:${state.username}` };
    }
    return this.fail("message after the exchange ended");
  }
}

export function startSaslSession(mechanism: SaslMechanism, users: SaslUserStore): SaslSession {
  return mechanism === "PLAIN" ? new PlainSession(users) : new ScramSession(mechanism, users);
}

/**
 * Users from `name:password` entries (the flag form is comma-separated, the file form one per
 * line with `#` comments). The password is everything after the first `:`, spaces included.
 */
export function parseSaslUsers(entries: readonly string[], source: string): Map<string, string> {
  const users = new Map<string, string>();
  for (const raw of entries) {
    // Only blank and comment lines are skipped; a password keeps its spaces.
    const entry = raw.replace(/\r$/, "");
    if (entry.trim() === "" || entry.trimStart().startsWith("#")) {
      continue;
    }
    const colon = entry.indexOf(":");
    if (colon <= 0 || colon === entry.length - 1) {
      // Never echo the entry: it may hold a password.
      throw new Error(`${source}: each user must be name:password`);
    }
    users.set(entry.slice(0, colon), entry.slice(colon + 1));
  }
  return users;
}
