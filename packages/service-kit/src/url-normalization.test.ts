import { describe, expect, it } from "vitest";
import { normalizePath } from "./url-normalization.ts";

describe("normalizePath", () => {
  it("decodes escapes of unreserved characters in the path, whatever the hex case", () => {
    expect(normalizePath("/%69nternal/v1/x")).toBe("/internal/v1/x");
    expect(normalizePath("/%761/health")).toBe("/v1/health");
    expect(normalizePath("/v1/%6c%65ads/%2D%2e%5f%7E")).toBe("/v1/leads/-._~");
  });

  it("keeps escapes of reserved and other characters, in upper-case hex", () => {
    expect(normalizePath("/v1/a%2fb%3a%20c%25")).toBe("/v1/a%2Fb%3A%20c%25");
  });

  it("decodes once: an escaped percent stays a percent, not a second escape", () => {
    expect(normalizePath("/%2569nternal")).toBe("/%2569nternal");
  });

  it("leaves the query as it was sent", () => {
    expect(normalizePath("/v1/health?probe=th%5Flive%5F")).toBe("/v1/health?probe=th%5Flive%5F");
    expect(normalizePath("/%761/health?probe=%41")).toBe("/v1/health?probe=%41");
  });

  it("returns a URL without escapes in its path unchanged", () => {
    const url = "/v1/leads/12-34?cursor=%41";
    expect(normalizePath(url)).toBe(url);
  });
});
