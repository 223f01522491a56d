import { describe, expect, it } from "vitest";
import {
  passwordLinkTitle,
  passwordLinkUrl,
  passwordLinkValidity,
  seatsLead,
} from "./team-logic.ts";

describe("the team page", () => {
  it("says how many seats are in use once both counts are known", () => {
    expect(seatsLead(5, 2)).toBe("2 of 5 seats in use.");
    expect(seatsLead(undefined, 2)).toBe("Members of your account.");
    expect(seatsLead(5, undefined)).toBe("Members of your account.");
  });

  it("puts the password token in the link's fragment, which browsers never send", () => {
    expect(passwordLinkUrl("https://app.example", "thpw_abc")).toBe(
      "https://app.example/set-password#token=thpw_abc",
    );
  });

  it("names a reset link and its one-day life apart from an invitation's seven days", () => {
    expect(passwordLinkTitle("reset")).toBe("Password reset link");
    expect(passwordLinkValidity("reset")).toBe(" within a day");
    expect(passwordLinkTitle("invite")).toBe("Invitation link");
    expect(passwordLinkValidity("invite")).toBe(" within 7 days");
  });
});
