import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { TierList } from "./plan.tsx";

describe("the plan page", () => {
  it("lists the tiers with the current one marked and leaves changing and cancelling to Billing", () => {
    const html = renderToStaticMarkup(<TierList current="operator" />);
    for (const text of ["Starter", "Operator", "Team", "Custom", "Current"]) {
      expect(html).toContain(text);
    }
    expect(html).toMatch(/<li class="current"><h3>Operator<\/h3>/);
    expect(html).toContain('href="/billing"');
    expect(html).not.toContain("<button");
  });
});
