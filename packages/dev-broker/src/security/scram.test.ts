// The SCRAM server math against RFC 7677's published SCRAM-SHA-256 exchange, and against a client
// written here from RFC 5802's definitions for SCRAM-SHA-512 (no RFC vector exists for it).
import { createHash, createHmac, pbkdf2Sync } from "node:crypto";
import { describe, expect, test } from "vitest";
import {
  parseSaslUsers,
  SaslAuthenticationFailure,
  SaslUserStore,
  startSaslSession,
} from "./sasl.ts";
import {
  decodeSaslName,
  deriveCredential,
  MIN_ITERATIONS,
  parseClientFinal,
  parseClientFirst,
  ScramError,
  serverFirst,
  verifyClientFinal,
} from "./scram.ts";

// RFC 7677 section 3.
const RFC = {
  password: "pencil",
  clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
  serverFirst:
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
  clientFinal:
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
  serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
};

describe("SCRAM server math (RFC 5802 / RFC 7677)", () => {
  const credential = deriveCredential(
    "SCRAM-SHA-256",
    RFC.password,
    Buffer.from("W22ZaJ0SNY7soEsUEjb6gQ==", "base64"),
    4096,
  );
  const first = parseClientFirst(RFC.clientFirst);
  const final = parseClientFinal(RFC.clientFinal);
  const authMessage = `${first.bare},${RFC.serverFirst},${final.withoutProof}`;

  test("the RFC 7677 exchange: server-first, proof check and server signature", () => {
    expect(first).toMatchObject({ gs2Header: "n,,", username: "user", authzid: null });
    expect(serverFirst(`${first.clientNonce}%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0`, credential)).toBe(
      RFC.serverFirst,
    );
    expect(final.channelBinding).toBe("biws"); // base64("n,,")
    expect(verifyClientFinal("SCRAM-SHA-256", credential, authMessage, final.proof)).toBe(
      RFC.serverFinal,
    );
  });

  test("a proof made with another password is rejected", () => {
    const other = deriveCredential(
      "SCRAM-SHA-256",
      "pencil2",
      Buffer.from("W22ZaJ0SNY7soEsUEjb6gQ==", "base64"),
      4096,
    );
    expect(verifyClientFinal("SCRAM-SHA-256", other, authMessage, final.proof)).toBeNull();
    const flipped = Buffer.from(final.proof);
    flipped[0] = (flipped[0] as number) ^ 1;
    expect(verifyClientFinal("SCRAM-SHA-256", credential, authMessage, flipped)).toBeNull();
    // A proof over a different AuthMessage (a replay into another exchange) fails too.
    expect(
      verifyClientFinal("SCRAM-SHA-256", credential, `${authMessage}x`, final.proof),
    ).toBeNull();
  });

  test("fewer than 4096 iterations are refused, as Kafka refuses them", () => {
    expect(() => deriveCredential("SCRAM-SHA-512", "pw", undefined, MIN_ITERATIONS - 1)).toThrow(
      ScramError,
    );
  });

  test("saslname escaping: =2C is ',' and =3D is '='; other '=' sequences are invalid", () => {
    expect(decodeSaslName("bob=2Cthe=3Dbuilder")).toBe("bob,the=builder");
    expect(() => decodeSaslName("bob=41")).toThrow(ScramError);
  });

  test("malformed client messages and channel binding are refused", () => {
    expect(() => parseClientFirst("n=user,r=abc")).toThrow(ScramError); // no gs2 header
    expect(() => parseClientFirst("p=tls-unique,,n=user,r=abc")).toThrow("channel binding");
    expect(() => parseClientFirst("n,,n=user")).toThrow(ScramError); // no nonce
    expect(() => parseClientFirst("n,,m=ext,n=user,r=abc")).toThrow("mandatory extensions");
    expect(() => parseClientFinal("c=biws,r=abc")).toThrow("no proof");
    expect(parseClientFirst("n,a=user,n=user,r=abc").authzid).toBe("user");
  });
});

/** A SCRAM client written from RFC 5802 section 3, independent of the server module. */
function client(mechanism: "SCRAM-SHA-256" | "SCRAM-SHA-512", username: string, password: string) {
  const algorithm = mechanism === "SCRAM-SHA-256" ? "sha256" : "sha512";
  const length = mechanism === "SCRAM-SHA-256" ? 32 : 64;
  const nonce = "fyko+d2lbbFgONRv9qkxdawL";
  const bare = `n=${username.replaceAll("=", "=3D").replaceAll(",", "=2C")},r=${nonce}`;
  let expectedServerFinal = "";
  return {
    first: Buffer.from(`n,,${bare}`),
    final(serverFirstMessage: string, tamper: (nonce: string) => string = (n) => n): Buffer {
      const attrs = Object.fromEntries(
        serverFirstMessage.split(",").map((kv) => [kv.slice(0, 1), kv.slice(2)]),
      );
      const salted = pbkdf2Sync(
        password,
        Buffer.from(attrs.s as string, "base64"),
        Number(attrs.i),
        length,
        algorithm,
      );
      const clientKey = createHmac(algorithm, salted).update("Client Key").digest();
      const storedKey = createHash(algorithm).update(clientKey).digest();
      const withoutProof = `c=biws,r=${tamper(attrs.r as string)}`;
      const authMessage = `${bare},${serverFirstMessage},${withoutProof}`;
      const signature = createHmac(algorithm, storedKey).update(authMessage).digest();
      const proof = clientKey.map((byte, i) => byte ^ (signature[i] as number));
      const serverKey = createHmac(algorithm, salted).update("Server Key").digest();
      expectedServerFinal = `v=${createHmac(algorithm, serverKey).update(authMessage).digest("base64")}`;
      return Buffer.from(`${withoutProof},p=${Buffer.from(proof).toString("base64")}`);
    },
    get expectedServerFinal() {
      return expectedServerFinal;
    },
  };
}

describe("SASL sessions", () => {
  const users = new SaslUserStore(new Map([["alice", "wonderland"]]));

  for (const mechanism of ["SCRAM-SHA-256", "SCRAM-SHA-512"] as const) {
    test(`${mechanism}: a full exchange authenticates and the server proves it knows the password`, () => {
      const session = startSaslSession(mechanism, users);
      const c = client(mechanism, "alice", "wonderland");
      const serverFirstMessage = session.step(c.first);
      expect(serverFirstMessage.principal).toBeNull();
      const text = serverFirstMessage.challenge.toString();
      expect(text).toMatch(/^r=fyko\+d2lbbFgONRv9qkxdawL[^,]+,s=[^,]+,i=4096$/);
      const done = session.step(c.final(text));
      expect(done.principal).toBe("User:alice");
      expect(done.challenge.toString()).toBe(c.expectedServerFinal);
    });

    test(`${mechanism}: a wrong password fails with Kafka's message`, () => {
      const session = startSaslSession(mechanism, users);
      const c = client(mechanism, "alice", "looking-glass");
      const text = session.step(c.first).challenge.toString();
      expect(() => session.step(c.final(text))).toThrow(
        `Authentication failed during authentication due to invalid credentials with SASL mechanism ${mechanism}`,
      );
    });
  }

  test("SCRAM: an unknown user gets a server-first like anyone else and fails only at the proof", () => {
    const session = startSaslSession("SCRAM-SHA-512", users);
    const c = client("SCRAM-SHA-512", "mallory", "x");
    const text = session.step(c.first).challenge.toString();
    expect(text).toMatch(/,i=4096$/);
    expect(() => session.step(c.final(text))).toThrow(SaslAuthenticationFailure);
  });

  test("SCRAM: a final nonce that does not end with the server's nonce is refused", () => {
    const session = startSaslSession("SCRAM-SHA-256", users);
    const c = client("SCRAM-SHA-256", "alice", "wonderland");
    const text = session.step(c.first).challenge.toString();
    // The last character changed to one it is not: a nonce may already end with any letter.
    const altered = (nonce: string) => `${nonce.slice(0, -1)}${nonce.endsWith("X") ? "Y" : "X"}`;
    expect(() => session.step(c.final(text, altered))).toThrow(SaslAuthenticationFailure);
  });

  test("SCRAM: librdkafka's doubled client nonce is accepted, as Kafka accepts it", () => {
    const session = startSaslSession("SCRAM-SHA-256", users);
    const c = client("SCRAM-SHA-256", "alice", "wonderland");
    const text = session.step(c.first).challenge.toString();
    const done = session.step(c.final(text, (nonce) => `fyko+d2lbbFgONRv9qkxdawL${nonce}`));
    expect(done.principal).toBe("User:alice");
  });

  test("PLAIN: right password, wrong password, foreign authorization id", () => {
    const plain = (token: string) => startSaslSession("PLAIN", users).step(Buffer.from(token));
    expect(plain("\u0000alice\u0000wonderland").principal).toBe("User:alice");
    expect(plain("alice\u0000alice\u0000wonderland").principal).toBe("User:alice");
    expect(() => plain("\u0000alice\u0000nope")).toThrow(
      "Authentication failed: Invalid username or password",
    );
    expect(() => plain("\u0000bob\u0000wonderland")).toThrow(
      "Authentication failed: Invalid username or password",
    );
    expect(() => plain("root\u0000alice\u0000wonderland")).toThrow(
      "authorization id that is different from username",
    );
    expect(() => plain("alice-wonderland")).toThrow("expected 3 tokens");
  });
});

describe("users from the flag or the file", () => {
  test("name:password per entry; the password is everything after the first ':'", () => {
    const users = parseSaslUsers(
      ["# comment", "", "alice:secret", "carol:c:a:r:o:l", "dave: spaced \r", "  "],
      "users.txt",
    );
    expect([...users]).toEqual([
      ["alice", "secret"],
      ["carol", "c:a:r:o:l"],
      ["dave", " spaced "],
    ]);
  });

  test("an entry without a password is refused without echoing it", () => {
    expect(() => parseSaslUsers(["alice:ok", "hunter2"], "--sasl-users")).toThrow(
      "--sasl-users: each user must be name:password",
    );
    expect(() => parseSaslUsers([":nameless"], "f")).toThrow("name:password");
    expect(() => parseSaslUsers(["empty:"], "f")).toThrow("name:password");
  });
});
