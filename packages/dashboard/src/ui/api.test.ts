// The page's way to the API, with the browser's fetch and cookie stood in for: the typed client
// with the session's CSRF header, one refresh of an expired session, and the limit headers as
// the client parses them. The browser test drives the same code against a real gateway.
import type { Limits } from "@th/client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiFailure, call, subscribeLimits, th, whenSignedOut } from "./api.ts";

type Sent = { method: string; path: string; csrf: string | null };

let sent: Sent[];
let answers: Response[];

function answer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

const SIX = {
  "x-ratelimit-limit": "600",
  "x-ratelimit-remaining": "597",
  "x-ratelimit-reset": "1800000000",
  "x-quota-lead-views-limit": "5000",
  "x-quota-lead-views-remaining": "4999",
  "x-quota-resets": "2026-12-22T00:00:00.000Z",
};

beforeEach(() => {
  sent = [];
  answers = [];
  vi.stubGlobal("document", { cookie: "other=1; th_csrf=token%3D1" });
  vi.stubGlobal("fetch", async (input: RequestInfo | URL, init?: RequestInit) => {
    // The page's own refresh call names a path relative to the page, as a browser resolves it.
    const request =
      typeof input === "string"
        ? new Request(new URL(input, "http://localhost"), init)
        : new Request(input, init);
    sent.push({
      method: request.method,
      path: new URL(request.url, "http://localhost").pathname,
      csrf: request.headers.get("x-csrf-token"),
    });
    const next = answers.shift();
    if (!next) {
      throw new Error(`no answer for ${request.method} ${request.url}`);
    }
    return next;
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("the dashboard's API calls", () => {
  it("send the session's CSRF token on every call and type the answer as the API declares it", async () => {
    answers.push(answer(200, { data: [] }, SIX));
    const keys = await call(th.GET("/v1/team/api-keys"));
    expect(keys.data).toEqual([]);
    expect(sent).toEqual([{ method: "GET", path: "/v1/team/api-keys", csrf: "token=1" }]);
  });

  it("feed the header bar the six headers as @th/client parses them, an absent one null", async () => {
    answers.push(answer(200, {}, SIX));
    await call(th.GET("/v1/usage"));
    const seen: Limits[] = [];
    const stop = subscribeLimits((limits) => seen.push(limits));
    try {
      // A remaining count that is absent is unknown, not the whole cap.
      const { "x-quota-lead-views-remaining": _absent, ...five } = SIX;
      answers.push(answer(200, {}, five));
      await call(th.GET("/v1/usage"));
      // An answer that names no tenant (no quota headers) leaves the bar as it was.
      answers.push(answer(200, { status: "ok" }));
      await call(th.GET("/v1/health"));
    } finally {
      stop();
    }
    // The last answer's limits on subscribing, then the one answer that carried a quota.
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({ rateLimit: 600, rateRemaining: 597, leadViewsRemaining: 4999 });
    expect(seen[0]?.quotaResetsAt?.toISOString()).toBe("2026-12-22T00:00:00.000Z");
    expect(seen[1]).toMatchObject({ leadViewsLimit: 5000, leadViewsRemaining: null });
  });

  it("refresh an expired session once and send the call again, or sign the page out", async () => {
    const signedOut = vi.fn();
    whenSignedOut(signedOut);
    answers.push(answer(401, { error: "unauthorized", detail: "expired" }));
    answers.push(answer(200, {}));
    answers.push(answer(200, { data: [] }, SIX));
    await call(th.GET("/v1/watchlists"));
    expect(sent.map((each) => `${each.method} ${each.path}`)).toEqual([
      "GET /v1/watchlists",
      "POST /v1/dashboard/session/refresh",
      "GET /v1/watchlists",
    ]);
    expect(signedOut).not.toHaveBeenCalled();

    answers.push(answer(401, { error: "unauthorized", detail: "expired" }));
    answers.push(answer(401, { error: "unauthorized", detail: "ended" }));
    const refused = await call(th.GET("/v1/watchlists")).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiFailure);
    expect((refused as ApiFailure).status).toBe(401);
    expect(signedOut).toHaveBeenCalledOnce();
  });

  it("throw the client's typed error with the API's code, detail and fields", async () => {
    answers.push(
      answer(400, {
        error: "invalid_request",
        detail: "invalid body",
        fields: [{ path: "body.label", message: "is required" }],
      }),
    );
    const refused = await call(th.POST("/v1/team/api-keys", { body: { label: "" } })).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiFailure);
    expect((refused as ApiFailure).code).toBe("invalid_request");
    expect((refused as ApiFailure).body?.fields).toEqual([
      { path: "body.label", message: "is required" },
    ]);
  });
});
