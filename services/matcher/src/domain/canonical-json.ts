// One byte-exact JSON form per value, so equal recipes hash equally however their keys were
// ordered when they arrived or came back out of Postgres `jsonb` (which reorders keys).

/**
 * JSON with object keys sorted (by UTF-16 code units, as `Array#sort` does), no whitespace,
 * `undefined` properties left out, and `-0` written as `0`. Arrays keep their order: where order
 * carries no meaning the caller sorts first. Throws on values JSON cannot carry faithfully
 * (non-finite numbers, bigints, functions, symbols), rather than writing `null` and hashing a lie.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) {
    return "null";
  }
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) {
        throw new TypeError(`canonicalJson: ${value} has no JSON form`);
      }
      return JSON.stringify(Object.is(value, -0) ? 0 : value);
    case "object": {
      if (Array.isArray(value)) {
        return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(",")}]`;
      }
      const record = value as Record<string, unknown>;
      const members = Object.keys(record)
        .filter((key) => record[key] !== undefined)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
      return `{${members.join(",")}}`;
    }
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} has no JSON form`);
  }
}
