import { describe, expect, it } from "vitest";
import { parseTarget, refusalFor, targetOf } from "./target.ts";

const production = { allowLoopback: false };
const development = { allowLoopback: true };

describe("an endpoint URL's target", () => {
  it("keeps the origin and the path with its query", () => {
    expect(parseTarget("https://hooks.example.com:8443/in/leads?x=1", production)).toEqual({
      kind: "target",
      protocol: "https:",
      origin: "https://hooks.example.com:8443",
      path: "/in/leads?x=1",
      host: "hooks.example.com",
      literal: false,
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

  it("refuses cloud metadata written as IPv4-translated, IPv4-compatible and every other IPv6 form that carries it", () => {
    for (const url of [
      "https://[::ffff:0:a9fe:a9fe]/latest/meta-data",
      "https://[::a9fe:a9fe]/latest/meta-data",
      "https://[::169.254.169.254]/latest/meta-data",
      "https://[0:0:0:0:ffff:0:169.254.169.254]/latest/meta-data",
      "https://[::ffff:a9fe:a9fe]/latest/meta-data",
      "https://[64:ff9b::a9fe:a9fe]/latest/meta-data",
      "https://[64:ff9b:1:a9fe:a9:fe00::]/latest/meta-data",
      "https://[2002:a9fe:a9fe::1]/latest/meta-data",
      "https://[2001:0:4136:e378:8000:63bf:5601:5601]/latest/meta-data",
      "https://[::127.0.0.1]:8080/",
      "https://[::ffff:0:7f00:1]:8080/",
      "https://[::ffff:0:a00:1]/",
      "https://[::6440:1]/",
    ]) {
      expect(parseTarget(url, production), url).toMatchObject({
        kind: "failure",
        failure: "blocked_address",
      });
    }
  });

  it("refuses decimal, hex, octal, short and dotted-hex IPv4 hosts: URL parsing turns them into the address they reach", () => {
    for (const url of [
      "https://2852039166/latest/meta-data",
      "https://0xa9fea9fe/latest/meta-data",
      "https://0xA9.0xFE.0xA9.0xFE/latest/meta-data",
      "https://0251.0376.0251.0376/latest/meta-data",
      "https://169.254.43518/latest/meta-data",
      "https://169.16689662/latest/meta-data",
      "https://127.1/",
      "https://0/",
      "https://127.0.0.1./",
      "https://0x7f000001/",
      "https://017700000001/",
      "https://%31%32%37.0.0.1/",
      "https://\uff11\uff12\uff17.0.0.1/",
    ]) {
      const host = new URL(url).hostname;
      expect(host, url).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      expect(targetOf(url, production), url).toMatchObject({
        kind: "refused",
        failure: "blocked_address",
        reason: `${host} is not a public address`,
      });
    }
    // Plain http in development is still refused to anything but loopback.
    expect(parseTarget("http://2852039166/", development)).toMatchObject({
      failure: "blocked_address",
    });
  });

  it("refuses credentials in the URL, at subscribe time and at delivery alike", () => {
    expect(targetOf("https://user:pass@hooks.example.com/", production)).toMatchObject({
      kind: "refused",
      reason: "url must not carry credentials",
    });
    expect(parseTarget("https://user@hooks.example.com/", production)).toMatchObject({
      kind: "failure",
      failure: "other",
    });
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
