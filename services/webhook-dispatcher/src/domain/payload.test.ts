import { matchFound, matchFoundSparse } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { webhookBody } from "./payload.ts";

describe("Payload of watchlist.match: the spec's types, also where the roll gives nothing", () => {
  it("writes match.owner.mailing_state as a string and match.valuation.est_equity as a number", () => {
    const body = JSON.parse(webhookBody(matchFound));
    expect(body.match.owner.mailing_state).toBe("CT");
    expect(body.match.valuation.est_equity).toBe(301_844);
  });

  it('writes an unknown mailing state as "" and an equity that cannot be estimated as 0, never null', () => {
    const body = JSON.parse(webhookBody(matchFoundSparse));
    expect(typeof body.match.owner.mailing_state).toBe("string");
    expect(body.match.owner.mailing_state).toBe("");
    expect(typeof body.match.valuation.est_equity).toBe("number");
    expect(body.match.valuation.est_equity).toBe(0);
    expect(webhookBody(matchFoundSparse)).not.toContain("null");
  });
});
