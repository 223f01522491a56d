import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ipv6Groups, parseIp, refusalOf } from "./address.ts";
import { targetOf } from "./target.ts";

const production = { allowLoopback: false };
const development = { allowLoopback: true };

// The test's own table of IPv4 space that is not public unicast (IANA special-purpose registry,
// multicast, reserved), written apart from the code's so that a range dropped there shows here.
const NON_PUBLIC_IPV4: readonly [number, number, number, number, number][] = [
  [0, 0, 0, 0, 8],
  [10, 0, 0, 0, 8],
  [100, 64, 0, 0, 10],
  [127, 0, 0, 0, 8],
  [169, 254, 0, 0, 16],
  [172, 16, 0, 0, 12],
  [192, 0, 0, 0, 24],
  [192, 0, 2, 0, 24],
  [192, 88, 99, 0, 24],
  [192, 168, 0, 0, 16],
  [198, 18, 0, 0, 15],
  [198, 51, 100, 0, 24],
  [203, 0, 113, 0, 24],
  [224, 0, 0, 0, 4],
  [240, 0, 0, 0, 4],
];

const asNumber = ([a, b, c, d]: readonly number[]) =>
  (((a ?? 0) << 24) | ((b ?? 0) << 16) | ((c ?? 0) << 8) | (d ?? 0)) >>> 0;
const octets = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const inRange = (n: number, [a, b, c, d, bits]: (typeof NON_PUBLIC_IPV4)[number]) =>
  bits === 0 || n >>> (32 - bits) === asNumber([a, b, c, d]) >>> (32 - bits);

/** Any address of one of the non-public IPv4 ranges, as four octets. */
const nonPublicIpv4 = fc
  .tuple(fc.constantFrom(...NON_PUBLIC_IPV4), fc.integer({ min: 0, max: 0xffffffff }))
  .map(([[a, b, c, d, bits], host]) => {
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    return octets(((asNumber([a, b, c, d]) & mask) | (host & ~mask)) >>> 0);
  });

/** Any public unicast IPv4 address. */
const publicIpv4 = fc
  .integer({ min: 0, max: 0xffffffff })
  .filter((n) => !NON_PUBLIC_IPV4.some((range) => inRange(n, range)))
  .map(octets);

const group = fc.integer({ min: 0, max: 0xffff });
const hi = (v4: readonly number[]) => ((v4[0] ?? 0) << 8) | (v4[1] ?? 0);
const lo = (v4: readonly number[]) => ((v4[2] ?? 0) << 8) | (v4[3] ?? 0);

/**
 * Every IPv6 form that carries an IPv4 address, as eight groups, for an attacker's IPv4 address
 * and filler the form leaves free.
 */
const EMBEDDINGS: Record<string, (v4: number[], free: number[]) => number[]> = {
  "IPv4-mapped ::ffff:a.b.c.d": (v4) => [0, 0, 0, 0, 0, 0xffff, hi(v4), lo(v4)],
  "IPv4-translated ::ffff:0:a.b.c.d": (v4) => [0, 0, 0, 0, 0xffff, 0, hi(v4), lo(v4)],
  "IPv4-compatible ::a.b.c.d": (v4) => [0, 0, 0, 0, 0, 0, hi(v4), lo(v4)],
  "NAT64 well-known 64:ff9b::/96": (v4) => [0x64, 0xff9b, 0, 0, 0, 0, hi(v4), lo(v4)],
  // RFC 6052's /48 layout: a.b in bits 48-63, the zero u-octet, then c.d.
  "NAT64 local-use 64:ff9b:1::/48": (v4, [f = 0]) => [
    0x64,
    0xff9b,
    1,
    hi(v4),
    v4[2] ?? 0,
    ((v4[3] ?? 0) << 8) | (f & 0xff),
    0,
    0,
  ],
  "6to4 2002:a.b.c.d::/48": (v4, [f1 = 0, f2 = 0, f3 = 0, f4 = 0, f5 = 0]) => [
    0x2002,
    hi(v4),
    lo(v4),
    f1,
    f2,
    f3,
    f4,
    f5,
  ],
  "Teredo server 2001:0:a.b.c.d::": (v4, [flags = 0, port = 0, c1 = 0, c2 = 0]) => [
    0x2001,
    0,
    hi(v4),
    lo(v4),
    flags,
    port,
    c1,
    c2,
  ],
  // The client's address is carried inverted in the last 32 bits; its server here is public.
  "Teredo client (inverted last 32 bits)": (v4, [flags = 0, port = 0]) => [
    0x2001,
    0,
    0x4136,
    0xe378,
    flags,
    port,
    ~hi(v4) & 0xffff,
    ~lo(v4) & 0xffff,
  ],
};

const hex = (n: number) => n.toString(16);

/** The ways one IPv6 address can be written in a URL or come back from a resolver. */
function spellings(groups: readonly number[]): string[] {
  const full = groups.map(hex).join(":");
  const padded = groups.map((g) => hex(g).padStart(4, "0")).join(":");
  const g6 = groups[6] ?? 0;
  const g7 = groups[7] ?? 0;
  const dottedTail = `${groups.slice(0, 6).map(hex).join(":")}:${g6 >> 8}.${g6 & 255}.${g7 >> 8}.${g7 & 255}`;
  const canonical = new URL(`https://[${full}]/`).hostname.slice(1, -1);
  return [full, padded, dottedTail, canonical, padded.toUpperCase(), `${canonical}%eth0`];
}

describe("the address a webhook may reach", () => {
  it("refuses every non-public IPv4 address, loopback included, and allows a public one", () => {
    fc.assert(
      fc.property(nonPublicIpv4, (v4) => {
        expect(refusalOf(v4.join("."), production)).toMatch(/is not a public address/);
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(publicIpv4, (v4) => {
        expect(refusalOf(v4.join("."), production)).toBeNull();
      }),
      { numRuns: 2_000 },
    );
  });

  it.each(Object.entries(EMBEDDINGS))(
    "refuses %s carrying a private, loopback, link-local, CGNAT or other non-public IPv4 address, however it is written",
    (_form, embed) => {
      fc.assert(
        fc.property(nonPublicIpv4, fc.array(group, { minLength: 5, maxLength: 5 }), (v4, free) => {
          for (const text of spellings(embed(v4, free))) {
            expect(refusalOf(text, production), text).not.toBeNull();
            const url = `https://[${text.split("%")[0]}]/hook`;
            expect(targetOf(url, production), url).toMatchObject({
              kind: "refused",
              failure: "blocked_address",
            });
          }
        }),
        { numRuns: 300 },
      );
    },
  );

  it("judges IPv4-mapped and NAT64 (what DNS64 answers) by the IPv4 address they carry, so a public one passes", () => {
    fc.assert(
      fc.property(publicIpv4, (v4) => {
        for (const embed of [
          EMBEDDINGS["IPv4-mapped ::ffff:a.b.c.d"],
          EMBEDDINGS["NAT64 well-known 64:ff9b::/96"],
        ]) {
          for (const text of spellings(embed?.(v4, []) ?? [])) {
            expect(refusalOf(text, production), text).toBeNull();
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it("refuses 6to4, Teredo, IPv4-compatible and IPv4-translated forms even with a public IPv4 address inside: deprecated tunnels, never a receiver's address", () => {
    fc.assert(
      fc.property(publicIpv4, fc.array(group, { minLength: 5, maxLength: 5 }), (v4, free) => {
        for (const form of [
          "6to4 2002:a.b.c.d::/48",
          "Teredo server 2001:0:a.b.c.d::",
          "Teredo client (inverted last 32 bits)",
          "IPv4-compatible ::a.b.c.d",
          "IPv4-translated ::ffff:0:a.b.c.d",
          "NAT64 local-use 64:ff9b:1::/48",
        ]) {
          const groups = EMBEDDINGS[form]?.(v4, free) ?? [];
          expect(refusalOf(groups.map(hex).join(":"), production), form).not.toBeNull();
        }
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ["loopback", "::1"],
    ["unspecified", "::"],
    ["link-local", "fe80::1"],
    ["unique-local", "fd12:3456::1"],
    ["unique-local fc00::/8", "fc00::1"],
    ["site-local", "fec0::1"],
    ["multicast", "ff02::1"],
    ["discard-only 100::/64", "100::1"],
    ["documentation 2001:db8::/32", "2001:db8::1"],
    ["documentation 3fff::/20", "3fff:fff::1"],
    ["benchmarking 2001:2::/48", "2001:2::1"],
    ["ORCHIDv2 2001:20::/28", "2001:20::1"],
    ["SRv6 SIDs 5f00::/16", "5f00::1"],
    ["unallocated outside 2000::/3", "4000::1"],
  ])("refuses IPv6 %s (%s)", (_name, address) => {
    expect(refusalOf(address, production)).toMatch(/is not a public address/);
    expect(targetOf(`https://[${address}]/hook`, production)).toMatchObject({ kind: "refused" });
  });

  it("allows public IPv6 unicast", () => {
    for (const address of ["2606:4700:4700::1111", "2a00:1450:4001:82b::200e", "2001:4860::1"]) {
      expect(refusalOf(address, production), address).toBeNull();
    }
  });

  it("refuses what is not an address in the strict dotted form (octal, hex, short, padded), failing closed", () => {
    for (const text of ["127.1", "0x7f.0.0.1", "0177.0.0.1", "2130706433", "127.000.000.001", ""]) {
      expect(refusalOf(text, production), text).toMatch(/is not an IP address/);
    }
  });

  it("allows loopback only with the development flag, and never another private range", () => {
    for (const address of ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"]) {
      expect(refusalOf(address, development), address).toBeNull();
      expect(refusalOf(address, production), address).not.toBeNull();
    }
    for (const address of ["10.0.0.1", "169.254.169.254", "::ffff:a9fe:a9fe", "fe80::1"]) {
      expect(refusalOf(address, development), address).not.toBeNull();
    }
  });
});

describe("an IPv6 address's groups", () => {
  it("are the same however the address is written", () => {
    fc.assert(
      fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), (groups) => {
        for (const text of spellings(groups)) {
          const ip = parseIp(text);
          expect(ip?.family, text).toBe("ipv6");
          expect(ip?.family === "ipv6" ? ip.groups : null, text).toEqual(groups);
        }
      }),
      { numRuns: 2_000 },
    );
    expect(ipv6Groups("::")).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups("1::")).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
  });
});
