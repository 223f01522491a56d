// Production must not run on a secret whose development default sits in the repository, and
// not only when a setting equals it: a list that carries it among real values
// (`SECRET_KEYS=prod-key,<dev default>`), a `name:secret` or `name=secret` list, the default
// padded with whitespace, or the same 32 bytes written in another encoding are that secret too.

/** Fragments this short could be a real value by chance (`dev`, a caller's name): exact only. */
const MIN_FRAGMENT_LENGTH = 8;

/** The items of a list setting: split on commas, semicolons and whitespace. */
function itemsOf(value: string): string[] {
  return value.split(/[\s,;]+/).filter((item) => item.length > 0);
}

/** The secret of a `name:secret` or `name=secret` item; the item itself otherwise. */
function secretOf(item: string): string {
  const at = item.search(/[:=]/);
  return at < 0 ? item : item.slice(at + 1);
}

/** The 32 bytes a key written as 64 hex characters or base64 stands for. */
function keyBytes(value: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(value)) {
    return Buffer.from(value, "hex");
  }
  if (!/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(value)) {
    return undefined;
  }
  const decoded = Buffer.from(
    value,
    value.includes("-") || value.includes("_") ? "base64url" : "base64",
  );
  return decoded.length === 32 ? decoded : undefined;
}

/** Every way a configured value could carry this development default, lower-cased. */
function devDefaultFragments(devDefault: string): string[] {
  const fragments = new Set<string>();
  for (const candidate of [devDefault.trim(), ...itemsOf(devDefault).map(secretOf)]) {
    if (candidate.length < MIN_FRAGMENT_LENGTH) {
      continue;
    }
    fragments.add(candidate);
    const bytes = keyBytes(candidate);
    if (bytes) {
      for (const encoding of ["hex", "base64", "base64url"] as const) {
        fragments.add(bytes.toString(encoding));
      }
      fragments.add(bytes.toString("base64").replace(/=+$/, ""));
    }
  }
  return [...fragments].map((fragment) => fragment.toLowerCase());
}

/** The string a setting holds, or its items joined, for a list setting; undefined for others. */
function textOf(value: unknown): string | undefined {
  if (typeof value === "string") {
    return value;
  }
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
    return value.join(",");
  }
  return undefined;
}

/**
 * The settings that carry a development default: equal to one (trimmed), or holding one of its
 * fragments anywhere, whichever setting declared it. Only variable names are reported, never
 * the values.
 */
export function devDefaultProblems(
  config: Record<string, unknown>,
  devDefaults: Record<string, string>,
): { variable: string; reason: string }[] {
  const forbidden = Object.entries(devDefaults).map(([owner, value]) => ({
    owner,
    exact: value.trim(),
    fragments: devDefaultFragments(value),
  }));
  const problems: { variable: string; reason: string }[] = [];
  for (const [variable, value] of Object.entries(config)) {
    const text = textOf(value);
    if (text === undefined) {
      continue;
    }
    const lower = text.toLowerCase();
    const found = forbidden.find(
      (entry) =>
        (variable in devDefaults && text.trim() === entry.exact) ||
        entry.fragments.some((fragment) => lower.includes(fragment)),
    );
    if (found) {
      problems.push({
        variable,
        reason:
          found.owner === variable && text.trim() === found.exact
            ? "must be set in production (the default is for development only)"
            : `must be set in production: it holds the development default of ${found.owner}`,
      });
    }
  }
  return problems;
}
