import { generateApiKey } from "@th/api-keys";
import { describe, expect, it } from "vitest";
import { bearerKey, keyRefusal } from "./key-authentication.ts";

describe("Authentication 1: the key of an Authorization header", () => {
  it("is the credential of a Bearer header, whatever the scheme's case", () => {
    const key = generateApiKey();
    expect(bearerKey(`Bearer ${key}`)).toBe(key);
    expect(bearerKey(`bearer  ${key}`)).toBe(key);
  });

  it("is refused, saying why, when missing, not Bearer, or not a well-formed key", () => {
    const key = generateApiKey();
    expect(bearerKey(undefined)).toEqual({
      refusal: "missing API key: send Authorization: Bearer <key>",
    });
    expect(bearerKey(`Basic ${key}`)).toEqual({
      refusal: "the Authorization header must be Bearer <key>",
    });
    expect(bearerKey(`Bearer ${key} extra`)).toEqual({
      refusal: "the Authorization header must be Bearer <key>",
    });
    const wrongChecksum = `${key.slice(0, -1)}${key.endsWith("A") ? "B" : "A"}`;
    expect(bearerKey(`Bearer ${wrongChecksum}`)).toEqual({ refusal: "malformed API key" });
  });
});

describe("the answer for a key", () => {
  it("refuses an unknown, revoked or inactive key with what is wrong with it", () => {
    expect(keyRefusal("unknown")).toBe("unknown API key");
    expect(keyRefusal("revoked")).toBe("this API key has been revoked");
    expect(keyRefusal("inactive")).toBe("the subscription of this key's tenant has ended");
  });

  it("is no refusal for an admitted key or one Redis does not hold yet", () => {
    expect(keyRefusal("ok")).toBeUndefined();
    expect(keyRefusal("miss")).toBeUndefined();
  });
});
