import { describe, expect, it } from "vitest";
import {
  endpointCapRefusal,
  endpointView,
  newEndpointId,
  subscribableEvents,
} from "./endpoints.ts";
import { EVENT_TYPE } from "./payload.ts";

describe("subscribableEvents", () => {
  it("keeps each event once", () => {
    expect(subscribableEvents([EVENT_TYPE, EVENT_TYPE])).toEqual([EVENT_TYPE]);
  });

  it("refuses an empty list", () => {
    expect(subscribableEvents([])).toBeNull();
  });

  it("refuses a list naming an event the dispatcher does not send", () => {
    expect(subscribableEvents([EVENT_TYPE, "parcel.ingested"])).toBeNull();
  });
});

describe("endpointView", () => {
  it("writes the creation time as an ISO instant", () => {
    const view = endpointView({
      id: "we_a",
      watchlist_id: "wl_a",
      url: "https://example.com/hook",
      events: [EVENT_TYPE],
      created_at: new Date("2026-01-02T03:04:05.678Z"),
    });
    expect(view.created_at).toBe("2026-01-02T03:04:05.678Z");
  });
});

describe("newEndpointId", () => {
  it("is we_ and 12 random bytes in base64url, different every time", () => {
    const id = newEndpointId();
    expect(id).toMatch(/^we_[A-Za-z0-9_-]{16}$/);
    expect(newEndpointId()).not.toBe(id);
  });
});

describe("endpointCapRefusal", () => {
  const limits = { perWatchlist: 5, perTenant: 50 };

  it("allows one more while both counts are under their caps", () => {
    expect(endpointCapRefusal({ tenant: 49, watchlist: 4 }, limits, "wl_a")).toBeNull();
  });

  it("refuses the watchlist's sixth endpoint, naming the watchlist and its cap", () => {
    expect(endpointCapRefusal({ tenant: 5, watchlist: 5 }, limits, "wl_a")).toMatch(
      /watchlist wl_a already has 5 webhook endpoints, the most allowed \(5\)/,
    );
  });

  it("refuses the tenant's fifty-first endpoint on a watchlist with room", () => {
    expect(endpointCapRefusal({ tenant: 50, watchlist: 0 }, limits, "wl_b")).toMatch(
      /this account already has 50 webhook endpoints, the most allowed \(50\)/,
    );
  });
});
