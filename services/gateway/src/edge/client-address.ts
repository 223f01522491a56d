import { BlockList, isIP } from "node:net";
import type { HttpApp } from "@th/service-kit";

/**
 * The client's address behind trusted proxies (decision 0336). The per-IP windows (public calls,
 * failed authentication) key on `request.ip`. Behind the chart's ingress every request arrives
 * from the ingress controller, so without this all clients would share one window; trusting
 * `X-Forwarded-For` from anyone would let each request name its own address and escape the
 * window. So the header is read only from the hops listed in `TRUSTED_PROXIES`: walking it from
 * the right, the client is the first address that is not a trusted proxy, as Fastify's
 * `trustProxy` (proxy-addr) decides it.
 */

/** The presets proxy-addr knows, so a list written for Fastify's `trustProxy` means the same here. */
const PRESETS: Record<string, string[]> = {
  loopback: ["127.0.0.1/8", "::1/128"],
  linklocal: ["169.254.0.0/16", "fe80::/10"],
  uniquelocal: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"],
};

/** One entry: an address, an address/prefix, or a preset; why it is wrong when it is. */
function entryProblem(entry: string): string | undefined {
  if (PRESETS[entry]) {
    return undefined;
  }
  const [address = "", prefix, extra] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || extra !== undefined) {
    return `"${entry}" is not an address, address/prefix, loopback, linklocal or uniquelocal`;
  }
  if (prefix !== undefined) {
    const bits = Number(prefix);
    if (!/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128)) {
      return `"${entry}" has a prefix length its address family does not allow`;
    }
  }
  return undefined;
}

/** The comma-separated setting as entries; the first problem, if any, as an Error. */
export function parseTrustedProxies(text: string): string[] {
  const entries = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  for (const entry of entries) {
    const problem = entryProblem(entry);
    if (problem) {
      throw new Error(problem);
    }
  }
  return entries;
}

/** Whether an address is one of the trusted proxies. */
export function trustedProxyList(entries: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const entry of entries.flatMap((each) => PRESETS[each] ?? [each])) {
    const [address = "", prefix] = entry.split("/");
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    if (prefix === undefined) {
      list.addAddress(address, family);
    } else {
      list.addSubnet(address, Number(prefix), family);
    }
  }
  return (address) => {
    const family = isIP(address);
    return family !== 0 && list.check(address, family === 6 ? "ipv6" : "ipv4");
  };
}

/**
 * The client of a request that reached us from `socketAddress` with this `X-Forwarded-For`:
 * the socket's address unless it is a trusted proxy; then, from the header's right end, the
 * first address that is not one (or the leftmost, when every hop is trusted).
 */
export function clientAddress(
  socketAddress: string,
  forwardedFor: string | string[] | undefined,
  trusted: (address: string) => boolean,
): string {
  if (!trusted(socketAddress) || forwardedFor === undefined) {
    return socketAddress;
  }
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor)
    .split(",")
    .map((hop) => hop.trim())
    .filter((hop) => hop !== "");
  let client = socketAddress;
  for (let i = hops.length - 1; i >= 0; i--) {
    client = hops[i] as string;
    if (!trusted(client)) {
      break;
    }
  }
  return client;
}

/**
 * Makes `request.ip` the client behind the trusted proxies, before any hook reads it. With no
 * trusted proxy nothing is registered, and `request.ip` stays the socket's address whatever
 * `X-Forwarded-For` says.
 */
export function registerClientAddress(app: HttpApp, trustedProxies: readonly string[]): void {
  if (trustedProxies.length === 0) {
    return;
  }
  const trusted = trustedProxyList(trustedProxies);
  app.addHook("onRequest", async (request) => {
    const socketAddress = request.raw.socket?.remoteAddress ?? request.ip;
    const ip = clientAddress(socketAddress, request.headers["x-forwarded-for"], trusted);
    if (ip !== socketAddress) {
      // Fastify's `ip` is a getter on the request's prototype; this request's own value shadows it.
      Object.defineProperty(request, "ip", { value: ip, enumerable: true });
    }
  });
}
