import { BlockList, isIP } from "node:net";

/**
 * Which addresses a webhook may reach: public unicast only (decision 0330). IPv4 is refused by
 * the special-purpose ranges below; IPv6 must be global unicast (2000::/3) outside the blocks
 * that are not reachable or reach somewhere else through a tunnel, and the two forms that carry
 * an IPv4 address a host really connects to (IPv4-mapped and NAT64's well-known prefix) are
 * judged by that IPv4 address.
 */
function blockListOf(family: "ipv4" | "ipv6", nets: readonly (readonly [string, number])[]) {
  const list = new BlockList();
  for (const [net, prefix] of nets) {
    list.addSubnet(net, prefix, family);
  }
  return list;
}

/** Not public unicast: this network, private, shared (CGNAT), loopback, link-local (cloud metadata
 * lives at 169.254.169.254), IETF protocol assignments, documentation, the deprecated 6to4 relay,
 * benchmarking, multicast, reserved and broadcast. */
const NON_PUBLIC_IPV4 = blockListOf("ipv4", [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
]);
const LOOPBACK_IPV4 = blockListOf("ipv4", [["127.0.0.0", 8]]);

/**
 * Everything outside 2000::/3 is refused by not being in it: ::, ::1, IPv4-compatible ::/96,
 * IPv4-translated ::ffff:0:0:0/96, local-use NAT64 64:ff9b:1::/48, discard 100::/64, ULA
 * fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8, SRv6 5f00::/16.
 */
const GLOBAL_UNICAST_IPV6 = blockListOf("ipv6", [["2000::", 3]]);
/** Inside 2000::/3 but not a receiver: IETF protocol assignments (Teredo 2001::/32 among them),
 * documentation, and 6to4, whose relays tunnel to the IPv4 address it carries. */
const NON_PUBLIC_GLOBAL_IPV6 = blockListOf("ipv6", [
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["3fff::", 20],
]);

export interface AddressPolicy {
  /** Development only: loopback addresses are allowed (other private ranges never are). */
  allowLoopback: boolean;
}

/** An address as text with its family; an IPv6 one also as its eight 16-bit groups. */
type Ip = { family: "ipv4"; text: string } | { family: "ipv6"; text: string; groups: number[] };

/** The groups of one side of `::`; a trailing dotted IPv4 part is two groups. */
function groupsOf(part: string): number[] {
  if (part === "") {
    return [];
  }
  return part.split(":").flatMap((group) => {
    if (!group.includes(".")) {
      return [Number.parseInt(group, 16)];
    }
    const [a = 0, b = 0, c = 0, d = 0] = group.split(".").map(Number);
    return [(a << 8) | b, (c << 8) | d];
  });
}

/**
 * The eight groups of an IPv6 address that `isIP` accepted (so it has at most one `::`, groups of
 * one to four hex digits, and a dotted-decimal IPv4 tail only at the end).
 */
export function ipv6Groups(address: string): number[] {
  const [head = "", tail] = address.split("::");
  const left = groupsOf(head);
  if (tail === undefined) {
    return left;
  }
  const right = groupsOf(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The address in canonical text, or null when it is none: only the strict forms `isIP` accepts
 * (dotted-decimal IPv4; octal, hex and short forms are not addresses here). A zone is dropped.
 */
export function parseIp(address: string): Ip | null {
  const bare = (address.replace(/^\[|\]$/g, "").split("%")[0] ?? "").toLowerCase();
  const version = isIP(bare);
  if (version === 4) {
    return { family: "ipv4", text: bare };
  }
  if (version === 6) {
    return { family: "ipv6", text: bare, groups: ipv6Groups(bare) };
  }
  return null;
}

const dotted = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

/**
 * The IPv4 address an IPv6 address reaches, for the forms a host connects through to IPv4 today:
 * IPv4-mapped ::ffff:a.b.c.d (a dual-stack socket) and NAT64's well-known 64:ff9b::a.b.c.d
 * (RFC 6052, what DNS64 answers on an IPv6-only network). Null for any other address.
 */
function translatedIpv4(groups: readonly number[]): string | null {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups;
  const mapped = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff;
  const nat64 = g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0;
  return mapped || nat64 ? dotted(g6, g7) : null;
}

function ipv4Refusal(address: string, policy: AddressPolicy): string | null {
  if (policy.allowLoopback && LOOPBACK_IPV4.check(address, "ipv4")) {
    return null;
  }
  return NON_PUBLIC_IPV4.check(address, "ipv4") ? "is not a public address" : null;
}

function ipv6Refusal(ip: { text: string; groups: number[] }, policy: AddressPolicy) {
  const ipv4 = translatedIpv4(ip.groups);
  if (ipv4 !== null) {
    return ipv4Refusal(ipv4, policy) && "carries an IPv4 address that is not public";
  }
  if (policy.allowLoopback && ip.text === "::1") {
    return null;
  }
  if (
    !GLOBAL_UNICAST_IPV6.check(ip.text, "ipv6") ||
    NON_PUBLIC_GLOBAL_IPV6.check(ip.text, "ipv6")
  ) {
    return "is not a public address";
  }
  return null;
}

/** Null when the address may be reached; otherwise why not (it names only the address given). */
export function refusalOf(address: string, policy: AddressPolicy): string | null {
  const ip = parseIp(address);
  if (!ip) {
    return `${address} is not an IP address`;
  }
  const refusal = ip.family === "ipv4" ? ipv4Refusal(ip.text, policy) : ipv6Refusal(ip, policy);
  return refusal && `${address} ${refusal}`;
}

export function isIpLiteral(host: string): boolean {
  return parseIp(host) !== null;
}
