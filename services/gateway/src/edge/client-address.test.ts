import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { clientAddress, parseTrustedProxies, trustedProxyList } from "./client-address.ts";

describe("the client behind trusted proxies", () => {
  const trusted = trustedProxyList(["10.0.0.0/8", "::1"]);

  it("is the socket's address when the socket is not a trusted proxy, whatever the header says", () => {
    expect(clientAddress("203.0.113.9", "198.51.100.1", trusted)).toBe("203.0.113.9");
    expect(clientAddress("203.0.113.9", "10.0.0.1, 198.51.100.1", trusted)).toBe("203.0.113.9");
  });

  it("is the rightmost address that is not a trusted proxy, so a client cannot put its own name first", () => {
    expect(clientAddress("10.1.2.3", "198.51.100.1", trusted)).toBe("198.51.100.1");
    // The client wrote `203.0.113.66`; the proxy appended the address it saw.
    expect(clientAddress("10.1.2.3", "203.0.113.66, 198.51.100.1", trusted)).toBe("198.51.100.1");
    expect(clientAddress("10.1.2.3", "203.0.113.66, 198.51.100.1, 10.9.9.9", trusted)).toBe(
      "198.51.100.1",
    );
    expect(clientAddress("10.1.2.3", ["203.0.113.66", "198.51.100.1"], trusted)).toBe(
      "198.51.100.1",
    );
  });

  it("is the leftmost hop when every hop is a trusted proxy, and the socket without a header", () => {
    expect(clientAddress("10.1.2.3", "10.0.0.5, 10.0.0.6", trusted)).toBe("10.0.0.5");
    expect(clientAddress("10.1.2.3", undefined, trusted)).toBe("10.1.2.3");
  });

  it("recognises a trusted IPv4 proxy written as an IPv4-mapped IPv6 socket address", () => {
    expect(clientAddress("::ffff:10.1.2.3", "198.51.100.1", trusted)).toBe("198.51.100.1");
    expect(clientAddress("::1", "198.51.100.1", trusted)).toBe("198.51.100.1");
  });

  it("is read from a setting of addresses, ranges and proxy-addr's presets, refusing anything else", () => {
    expect(parseTrustedProxies("")).toEqual([]);
    expect(parseTrustedProxies(" 10.0.0.0/8, ::1 ,uniquelocal")).toEqual([
      "10.0.0.0/8",
      "::1",
      "uniquelocal",
    ]);
    expect(() => parseTrustedProxies("ingress-nginx")).toThrow(/not an address/);
    expect(() => parseTrustedProxies("10.0.0.0/33")).toThrow(/prefix length/);
    expect(() => parseTrustedProxies("10.0.0.0/8/8")).toThrow(/not an address/);
    expect(() => readConfig({ TRUSTED_PROXIES: "*" })).toThrow(/TRUSTED_PROXIES/);
    expect(trustedProxyList(["uniquelocal"])("192.168.4.4")).toBe(true);
    expect(trustedProxyList(["uniquelocal"])("198.51.100.1")).toBe(false);
  });
});

describe("the per-IP windows behind a proxy", () => {
  let harness: TestHarness<Config>;
  let direct: Awaited<ReturnType<typeof buildApp>>;
  let proxied: Awaited<ReturnType<typeof buildApp>>;
  const PROXY = "10.20.30.40";

  beforeAll(async () => {
    harness = await createTestHarness({ config: readConfig({}), migrations: [] });
    direct = await buildApp(harness);
    proxied = await buildApp({ ...harness, config: readConfig({ TRUSTED_PROXIES: PROXY }) });
  });
  afterAll(async () => {
    await direct.http?.close();
    await proxied.http?.close();
    await harness.close();
  });

  /** A request without a credential: refused, and counted in its client's failed-auth window. */
  async function unauthenticated(
    app: typeof direct,
    remoteAddress: string,
    forwardedFor?: string,
  ): Promise<number> {
    const response = await app.http?.inject({
      method: "GET",
      url: "/v1/me",
      remoteAddress,
      headers: forwardedFor ? { "x-forwarded-for": forwardedFor } : {},
    });
    expect(response?.statusCode).toBe(401);
    return Number(response?.headers["x-ratelimit-remaining"]);
  }

  it("with no trusted proxy, are not escaped by naming another client in X-Forwarded-For", async () => {
    const attacker = "198.51.100.200";
    const first = await unauthenticated(direct, attacker, "203.0.113.1");
    expect(await unauthenticated(direct, attacker, "203.0.113.2")).toBe(first - 1);
    expect(await unauthenticated(direct, attacker, "203.0.113.3, 203.0.113.4")).toBe(first - 2);
    expect(await unauthenticated(direct, attacker)).toBe(first - 3);
  });

  it("through a trusted proxy, count each client on its own, and a client's own header does not move it", async () => {
    const alice = await unauthenticated(proxied, PROXY, "198.51.100.11");
    const bob = await unauthenticated(proxied, PROXY, "198.51.100.12");
    expect(bob).toBe(alice);
    expect(await unauthenticated(proxied, PROXY, "203.0.113.99, 198.51.100.11")).toBe(alice - 1);
    expect(await unauthenticated(proxied, PROXY, "198.51.100.11")).toBe(alice - 2);
  });

  it("from an address that is not the trusted proxy, ignore the header there too", async () => {
    const elsewhere = "198.51.100.77";
    const first = await unauthenticated(proxied, elsewhere, "203.0.113.5");
    expect(await unauthenticated(proxied, elsewhere, "203.0.113.6")).toBe(first - 1);
  });
});
