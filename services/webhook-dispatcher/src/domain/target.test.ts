import { describe, expect, it } from "vitest";
import { parseTarget, refusalFor } from "./target.ts";

const production = { allowLoopback: false };
const development = { allowLoopback: true };

describe("an endpoint URL's target", () => {
  it("keeps the origin and the path with its query", () => {
    expect(parseTarget("https://hooks.example.com:8443/in/leads?x=1", production)).toEqual({
      kind: "target",
      protocol: "https:",
      origin: "https://hooks.example.com:8443",
      path: "/in/leads?x=1",
    });
  });

  it("is a failed attempt when the URL does not parse", () => {
    expect(parseTarget("not a url", production)).toMatchObject({
      kind: "failure",
      failure: "other",
    });
  });

  it("refuses plain http and other schemes in production", () => {
    for (const url of ["http://127.0.0.1/hook", "ftp://example.com/hook"]) {
      expect(parseTarget(url, production)).toMatchObject({
        kind: "failure",
        failure: "blocked_address",
        error: "url must use https",
      });
    }
    expect(parseTarget("ftp://example.com/hook", development)).toMatchObject({
      failure: "blocked_address",
    });
  });

  it("refuses a literal private address, IPv6 included", () => {
    for (const url of ["https://10.1.2.3/hook", "https://[::ffff:169.254.169.254]/hook"]) {
      expect(parseTarget(url, production)).toMatchObject({ failure: "blocked_address" });
    }
  });

  it("allows plain http to loopback only in development", () => {
    expect(parseTarget("http://127.0.0.1:9000/hook", development)).toMatchObject({
      kind: "target",
      protocol: "http:",
    });
  });
});

describe("an address refusal", () => {
  it("refuses plain http to a public address even in development", () => {
    expect(refusalFor("http:", "93.184.216.34", development)).toMatch(/only allowed to loopback/);
    expect(refusalFor("https:", "93.184.216.34", development)).toBeNull();
  });
});
