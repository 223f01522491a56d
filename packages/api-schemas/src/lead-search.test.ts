// MCP's search_leads takes its arguments as JSON, REST's GET /v1/leads as a query string; both
// are declared from one table of names and bounds. Whatever an assistant sends is sent on as the
// query string REST reads, so the two must accept and refuse exactly the same searches.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LEAD_SIGNALS, RECIPE_USE_CLASSES } from "./catalogue.ts";
import {
  LEAD_SEARCH_BOUNDS,
  leadSearchArgumentsSchema,
  leadSearchQuerySchema,
  searchQueryOf,
} from "./lead.ts";

type Bounded = keyof typeof LEAD_SEARCH_BOUNDS;

/** Whole numbers at and just past a bound, and some anywhere: where drift would show. */
function around(name: Bounded) {
  const { min, max } = LEAD_SEARCH_BOUNDS[name];
  return fc.oneof(
    fc.constantFrom(min - 1, min, min + 1, max - 1, max, max + 1),
    fc.integer({ min: Math.max(min - 1000, -2e12), max: Math.min(max + 1000, 2e12) }),
  );
}

const argumentsArbitrary = fc.record(
  {
    county: around("county"),
    city: fc.oneof(fc.constant(""), fc.string({ minLength: 1, maxLength: 70 })),
    zip: fc.oneof(fc.stringMatching(/^\d{5}$/), fc.constantFrom("3310", "331011", "abcde")),
    use_class: fc.constantFrom(...RECIPE_USE_CLASSES, "castle"),
    signals: fc.array(fc.constantFrom(...LEAD_SIGNALS, "no_such_signal"), {
      minLength: 1,
      maxLength: 4,
    }),
    min_just_value: around("min_just_value"),
    max_just_value: around("max_just_value"),
    min_equity: around("min_equity"),
    max_equity: around("max_equity"),
    limit: around("limit"),
  },
  { requiredKeys: [] },
);

const restOf = (args: Record<string, unknown>) =>
  leadSearchQuerySchema.safeParse(Object.fromEntries(searchQueryOf(args)));

describe("the lead search, as REST's query and as MCP's arguments", () => {
  it("names the same filters and paging", () => {
    expect(Object.keys(leadSearchArgumentsSchema.shape).sort()).toEqual(
      Object.keys(leadSearchQuerySchema.shape).sort(),
    );
  });

  it("accepts and refuses the same searches, and reads an accepted one to the same values", () => {
    fc.assert(
      fc.property(argumentsArbitrary, (args) => {
        const mcp = leadSearchArgumentsSchema.safeParse(args);
        const rest = restOf(args);
        expect(rest.success, JSON.stringify(args)).toBe(mcp.success);
        if (mcp.success && rest.success) {
          // The page size is the one difference: a smaller default page for assistants.
          const { limit: _mcpLimit, ...mcpValues } = mcp.data;
          const { limit: _restLimit, ...restValues } = rest.data;
          expect(restValues).toEqual(mcpValues);
          if (args.limit !== undefined) {
            expect(rest.data.limit).toBe(mcp.data.limit);
          }
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it("refuses what the copied MCP schema let through: a page over 50 is allowed up to 200, unknown signals and unbounded dollars are not", () => {
    expect(leadSearchArgumentsSchema.safeParse({ limit: 200 }).success).toBe(true);
    expect(leadSearchArgumentsSchema.safeParse({ limit: 201 }).success).toBe(false);
    expect(leadSearchArgumentsSchema.safeParse({ signals: ["absentee_owners"] }).success).toBe(
      false,
    );
    expect(leadSearchArgumentsSchema.safeParse({ min_just_value: 1e15 }).success).toBe(false);
    expect(leadSearchArgumentsSchema.safeParse({ min_just_value: -1 }).success).toBe(false);
    expect(leadSearchArgumentsSchema.safeParse({ min_equity: -1 }).success).toBe(true);
  });
});
