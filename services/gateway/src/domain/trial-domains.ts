/**
 * Second-level labels under which a country's registries sell names (`example.co.uk`): a
 * domain under one of them is counted with its third label, so every company under `co.uk`
 * does not share one window.
 */
const PUBLIC_SECOND_LEVELS = new Set(["ac", "co", "com", "edu", "gov", "net", "org", "ne", "or"]);

/**
 * The domain whose window a trial start counts in (decision 0362): the email's domain in one
 * normal form, cut to the name its owner registered, so `a.example.com`, `b.example.com` and
 * `EXAMPLE.com.` are one domain, and one owner cannot escape the limit with subdomains.
 */
export function trialDomainOf(email: string): string {
  const at = email.lastIndexOf("@");
  const domain = email
    .slice(at + 1)
    .normalize("NFKC")
    .trim()
    .toLowerCase()
    .replace(/\.+$/, "");
  const labels = domain.split(".").filter((label) => label !== "");
  if (labels.length <= 2) {
    return labels.join(".");
  }
  const [secondLevel = "", topLevel = ""] = labels.slice(-2);
  const registered = topLevel.length === 2 && PUBLIC_SECOND_LEVELS.has(secondLevel) ? 3 : 2;
  return labels.slice(-registered).join(".");
}

/** Whole seconds until `retryAtMs`, never less than one. */
export function retryAfterSeconds(retryAtMs: number, now: number): number {
  return Math.max(1, Math.ceil((retryAtMs - now) / 1000));
}
