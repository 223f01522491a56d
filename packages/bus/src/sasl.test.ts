import { describe, expect, it } from "vitest";
import { readAuthenticate, readHandshake } from "./sasl.ts";

describe("SASL answers", () => {
  it("reads the mechanisms a SaslHandshake v1 answer lists with its error", () => {
    const names = ["SCRAM-SHA-512", "PLAIN"].map((name) => Buffer.from(name));
    const body = Buffer.alloc(2 + 4 + names.reduce((sum, name) => sum + 2 + name.length, 0));
    let pos = body.writeInt16BE(33, 0);
    pos = body.writeInt32BE(names.length, pos);
    for (const name of names) {
      pos = body.writeInt16BE(name.length, pos);
      pos += name.copy(body, pos);
    }
    expect(readHandshake(body)).toEqual({ error: 33, mechanisms: ["SCRAM-SHA-512", "PLAIN"] });
  });

  it("reads a SaslAuthenticate v1 answer: error, message, bytes and the session lifetime", () => {
    const message = Buffer.from("Authentication failed");
    const bytes = Buffer.from("v=abc");
    const body = Buffer.alloc(2 + 2 + message.length + 4 + bytes.length + 8);
    let pos = body.writeInt16BE(58, 0);
    pos = body.writeInt16BE(message.length, pos);
    pos += message.copy(body, pos);
    pos = body.writeInt32BE(bytes.length, pos);
    pos += bytes.copy(body, pos);
    body.writeBigInt64BE(3_600_000n, pos);
    const answer = readAuthenticate(body);
    expect(answer.error).toBe(58);
    expect(answer.message).toBe("Authentication failed");
    expect(answer.bytes.toString()).toBe("v=abc");
    expect(answer.lifetimeMs).toBe(3_600_000);
  });

  it("takes a null message and empty bytes", () => {
    const body = Buffer.alloc(2 + 2 + 4 + 8);
    let pos = body.writeInt16BE(0, 0);
    pos = body.writeInt16BE(-1, pos);
    pos = body.writeInt32BE(0, pos);
    body.writeBigInt64BE(0n, pos);
    expect(readAuthenticate(body)).toMatchObject({ error: 0, message: null, lifetimeMs: 0 });
  });
});
