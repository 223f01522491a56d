import { describe, expect, it } from "vitest";
import { retryAfterSeconds, trialDomainOf } from "./trial-domains.ts";

describe("the trial-start domain of an email", () => {
  it("is the registered name, so subdomains, case and a trailing dot do not make another domain", () => {
    for (const email of [
      "a@example.com",
      "b@EXAMPLE.com",
      "c@sales.example.com",
      "d@x.y.z.example.com",
      "e@example.com.",
      "f@ｅｘａｍｐｌｅ.com",
    ]) {
      expect(trialDomainOf(email), email).toBe("example.com");
    }
  });

  it("keeps the third label under a country's public second level, so companies there stay apart", () => {
    expect(trialDomainOf("a@acme.co.uk")).toBe("acme.co.uk");
    expect(trialDomainOf("a@mail.acme.co.uk")).toBe("acme.co.uk");
    expect(trialDomainOf("a@other.co.uk")).toBe("other.co.uk");
    expect(trialDomainOf("a@dept.acme.com.au")).toBe("acme.com.au");
  });

  it("reads the last @ only", () => {
    expect(trialDomainOf('"x@evil.test"@acme.test')).toBe("acme.test");
  });
});

describe("a retry wait", () => {
  it("is whole seconds, at least one", () => {
    expect(retryAfterSeconds(10_500, 10_000)).toBe(1);
    expect(retryAfterSeconds(12_001, 10_000)).toBe(3);
    expect(retryAfterSeconds(9_000, 10_000)).toBe(1);
  });
});
