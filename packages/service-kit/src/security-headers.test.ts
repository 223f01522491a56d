import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpApp, type HttpApp } from "./app.ts";
import { ApiError } from "./errors.ts";
import {
  HSTS,
  NO_CONTENT_POLICY,
  registerSecurityHeaders,
  securityHeaders,
} from "./security-headers.ts";

let app: HttpApp;

beforeAll(async () => {
  app = await createHttpApp({
    logger: createLogger({ service: "kit-test", level: "silent" }),
    title: "kit test",
  });
  registerSecurityHeaders(app, { hsts: true });
  // A second registration (runService's default for every service) keeps the first's options.
  registerSecurityHeaders(app, { hsts: false });
  app.get("/json", async () => ({ ok: true }));
  app.get("/page", async (_request, reply) =>
    reply
      .type("text/html")
      .header("content-security-policy", "default-src 'self'; frame-ancestors 'none'")
      .send("<p>hi</p>"),
  );
  app.get("/refused", async () => {
    throw new ApiError("forbidden", "no");
  });
  app.get("/broken", async () => {
    throw new Error("a bug");
  });
  await app.ready();
});
afterAll(() => app.close());

describe("security headers", () => {
  it("are on a success, a refusal, a failure and an unknown path, once registered", async () => {
    for (const [url, status] of [
      ["/json", 200],
      ["/refused", 403],
      ["/broken", 500],
      ["/nowhere", 404],
    ] as const) {
      const response = await app.inject({ method: "GET", url });
      expect(response.statusCode, url).toBe(status);
      expect(response.headers["x-content-type-options"], url).toBe("nosniff");
      expect(response.headers["x-frame-options"], url).toBe("DENY");
      expect(response.headers["content-security-policy"], url).toBe(NO_CONTENT_POLICY);
      expect(response.headers["strict-transport-security"], url).toBe(HSTS);
    }
  });

  it("leave an answer's own content policy in place", async () => {
    const response = await app.inject({ method: "GET", url: "/page" });
    expect(response.headers["content-security-policy"]).toBe(
      "default-src 'self'; frame-ancestors 'none'",
    );
    expect(response.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("say HSTS for a year with subdomains, and only where asked", () => {
    expect(HSTS).toBe("max-age=31536000; includeSubDomains");
    expect(securityHeaders({ hsts: false })).not.toHaveProperty("strict-transport-security");
  });
});
