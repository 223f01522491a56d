import { describe, expect, it } from "vitest";
import { ScramClient, ScramError } from "./scram.ts";

describe("SCRAM client", () => {
  it("reproduces the SCRAM-SHA-256 exchange of RFC 7677 section 3", () => {
    const client = new ScramClient("user", "pencil", "sha256", "rOprNGfwEbeRWgbNEkqO");
    expect(client.first()).toBe("n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    expect(
      client.final(
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
      ),
    ).toBe(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    );
    expect(() => client.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")).not.toThrow();
  });

  it("reproduces the SCRAM-SHA-1 exchange of RFC 5802 section 5 (the same algorithm)", () => {
    const client = new ScramClient("user", "pencil", "sha1", "fyko+d2lbbFgONRv9qkxdawL");
    expect(client.first()).toBe("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
    expect(
      client.final("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"),
    ).toBe("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=");
    expect(() => client.verify("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")).not.toThrow();
  });

  it("refuses a server signature that does not prove knowledge of the password", () => {
    const client = new ScramClient("user", "pencil", "sha256", "rOprNGfwEbeRWgbNEkqO");
    client.first();
    client.final(
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    );
    expect(() => client.verify("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")).toThrow(
      /server's signature is wrong/,
    );
    expect(() => client.verify("e=invalid-proof")).toThrow(/server refused: invalid-proof/);
  });

  it("refuses a nonce that does not extend its own, and weak or absurd iteration counts", () => {
    const start = () => {
      const client = new ScramClient("user", "pencil", "sha512", "abc");
      client.first();
      return client;
    };
    expect(() => start().final("r=xyzdef,s=QSXCR+Q6sek8bf92,i=4096")).toThrow(/nonce/);
    expect(() => start().final("r=abc,s=QSXCR+Q6sek8bf92,i=4096")).toThrow(/nonce/);
    expect(() => start().final("r=abcdef,s=QSXCR+Q6sek8bf92,i=1")).toThrow(/iteration count 1/);
    expect(() => start().final("r=abcdef,s=QSXCR+Q6sek8bf92,i=99999999")).toThrow(/iteration/);
    expect(() => start().final("m=ext,r=abcdef,s=QSXCR+Q6sek8bf92,i=4096")).toThrow(/extension/);
  });

  it("escapes ',' and '=' in the user name and never puts the password in a message or error", () => {
    const client = new ScramClient("a,b=c", "hunter2-secret", "sha512", "nonce");
    expect(client.first()).toBe("n,,n=a=2Cb=3Dc,r=nonce");
    const final = client.final("r=nonce-server,s=c2FsdA==,i=4096");
    expect(final).not.toContain("hunter2-secret");
    try {
      client.verify("v=bad");
    } catch (error) {
      expect(error).toBeInstanceOf(ScramError);
      expect(String(error)).not.toContain("hunter2-secret");
    }
    expect.assertions(4);
  });
});
