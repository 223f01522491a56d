/**
 * Secrets that must never reach a log line: API keys, webhook signing secrets, bearer tokens and
 * passwords inside URLs. Only a recognisable prefix and the last four characters survive, which is
 * what support needs to tell two keys apart.
 */
const SECRET_PATTERNS: readonly RegExp[] = [
  /\b(th_(?:live|test)_)[A-Za-z0-9]+/g,
  /\b(whsec_)[A-Za-z0-9+/=_-]+/g,
  /\b(Bearer\s+)[^\s,"]+/gi,
];
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/\s]+:)[^@\s]+@/gi;
const SECRET_FIELD = /^(authorization|cookie|set-cookie|password|secret|api_?key|token|pepper)$/i;

export function scrubText(text: string): string {
  let scrubbed = text.replace(URL_PASSWORD, "$1***@");
  for (const pattern of SECRET_PATTERNS) {
    scrubbed = scrubbed.replace(pattern, (match: string, prefix: string) => {
      const tail = match.slice(prefix.length);
      return `${prefix}…${tail.length > 8 ? tail.slice(-4) : ""}`;
    });
  }
  return scrubbed;
}

/** Deep copy with secret-named fields masked and secret-shaped strings scrubbed. */
export function scrubValue(value: unknown, depth = 0): unknown {
  if (typeof value === "string") {
    return scrubText(value);
  }
  if (depth > 6 || value === null || typeof value !== "object") {
    return value;
  }
  if (value instanceof Error) {
    return {
      type: value.name,
      message: scrubText(value.message),
      stack: scrubText(value.stack ?? ""),
    };
  }
  if (Array.isArray(value)) {
    return value.map((item) => scrubValue(item, depth + 1));
  }
  if (Buffer.isBuffer(value)) {
    return `<${value.length} bytes>`;
  }
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    copy[key] = SECRET_FIELD.test(key) ? "[redacted]" : scrubValue(field, depth + 1);
  }
  return copy;
}
