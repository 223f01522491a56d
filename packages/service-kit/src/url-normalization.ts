// RFC 3986 §6.2.2: a percent-escape of an unreserved character (letters, digits, `-._~`) means
// the character itself, and escapes are compared with upper-case hex. The router already decodes
// such escapes when it matches a route, so the path is put in that one form before routing:
// `/%69nternal` and `/internal` are then the same path to every hook as well as to the router.

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/**
 * The URL with its path in normal form: escapes of unreserved characters decoded, other escapes
 * in upper-case hex. The query is left as sent; a malformed escape is left for the caller to refuse.
 */
export function normalizePath(url: string): string {
  const end = pathEnd(url);
  const percent = url.indexOf("%");
  if (percent === -1 || percent > end) {
    return url;
  }
  const path = url.slice(0, end).replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const character = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
  });
  return `${path}${url.slice(end)}`;
}

/** Where the path ends: at the first `?` or `#`, else the URL's end. */
function pathEnd(url: string): number {
  for (let i = 0; i < url.length; i++) {
    const code = url.charCodeAt(i);
    if (code === 63 || code === 35) {
      return i;
    }
  }
  return url.length;
}
