import { describe, expect, it } from "vitest";
import { baseShape, ConfigError, defineConfig } from "./index.ts";

const config = defineConfig(baseShape);

describe("HTTP server settings", () => {
  it("bound every server by 10 s of headers, 30 s of request and 5 s of idle keep-alive unless set", () => {
    const loaded = config.load({});
    expect(loaded.HTTP_HEADERS_TIMEOUT_MS).toBe(10_000);
    expect(loaded.HTTP_REQUEST_TIMEOUT_MS).toBe(30_000);
    expect(loaded.HTTP_KEEP_ALIVE_TIMEOUT_MS).toBe(5_000);
  });

  it("refuse a zero or negative bound, which would turn a timeout off", () => {
    for (const value of ["0", "-1", "abc"]) {
      expect(() => config.load({ HTTP_REQUEST_TIMEOUT_MS: value }), value).toThrow(ConfigError);
    }
  });

  it("refuse a headers bound longer than the request bound, naming the variable", () => {
    expect(() =>
      config.load({ HTTP_HEADERS_TIMEOUT_MS: "40000", HTTP_REQUEST_TIMEOUT_MS: "30000" }),
    ).toThrow(/HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS/);
  });
});
