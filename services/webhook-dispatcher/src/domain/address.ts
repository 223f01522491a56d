import { BlockList, isIP } from "node:net";

/**
 * Addresses a webhook may never reach: private, loopback, link-local (cloud metadata lives at
 * 169.254.169.254), shared, reserved, multicast, documentation, and their IPv6 forms.
 */
const blocked = new BlockList();
for (const [net, prefix] of [
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
] as const) {
  blocked.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const) {
  blocked.addSubnet(net, prefix, "ipv6");
}

const loopback = new BlockList();
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");

/** IPv4-mapped and -compatible IPv6 addresses are judged by their IPv4 part. */
function normalise(address: string): { address: string; family: "ipv4" | "ipv6" } | null {
  const bare = address.replace(/^\[|\]$/g, "").split("%")[0] ?? "";
  const version = isIP(bare);
  if (version === 4) {
    return { address: bare, family: "ipv4" };
  }
  if (version === 6) {
    const mapped = /^(?:0*:)*(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
    if (mapped?.[1]) {
      return { address: mapped[1], family: "ipv4" };
    }
    const hexMapped = /^(?:0*:)*ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(bare);
    if (hexMapped?.[1] && hexMapped[2]) {
      const high = Number.parseInt(hexMapped[1], 16);
      const low = Number.parseInt(hexMapped[2], 16);
      return {
        address: `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`,
        family: "ipv4",
      };
    }
    return { address: bare, family: "ipv6" };
  }
  return null;
}

export interface AddressPolicy {
  /** Development only: loopback addresses are allowed (other private ranges never are). */
  allowLoopback: boolean;
}

/** Null when the address may be reached; otherwise why not. */
export function refusalOf(address: string, policy: AddressPolicy): string | null {
  const ip = normalise(address);
  if (!ip) {
    return `${address} is not an IP address`;
  }
  if (policy.allowLoopback && loopback.check(ip.address, ip.family)) {
    return null;
  }
  if (blocked.check(ip.address, ip.family)) {
    return `${address} is a private, loopback, link-local or reserved address`;
  }
  return null;
}

export function isIpLiteral(host: string): boolean {
  return normalise(host) !== null;
}
