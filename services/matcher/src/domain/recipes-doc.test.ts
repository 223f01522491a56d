// docs/recipes.md is the tenant-facing reference: its example recipes must be accepted, and its
// example of a rejected recipe must be rejected with exactly the issues it shows.
import { readFileSync } from "node:fs";
import { type RecipeIssue, validateRecipe } from "@th/api-schemas";
import { parcelIngested } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { evaluateRecipe } from "./evaluate.ts";

const doc = readFileSync(new URL("../../../../docs/recipes.md", import.meta.url), "utf8");
const jsonBlocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map(
  (block) => JSON.parse(block[1] ?? "null") as unknown,
);

function isIssueList(value: unknown): value is RecipeIssue[] {
  return Array.isArray(value) && value.every((item) => typeof item === "object" && "path" in item);
}

function isEvaluation(value: unknown): boolean {
  return typeof value === "object" && value !== null && "matched" in value;
}

describe("docs/recipes.md", () => {
  it("has the four example recipes and the rejected one", () => {
    expect(jsonBlocks.length).toBeGreaterThanOrEqual(7);
  });

  jsonBlocks.forEach((block, index) => {
    const next = jsonBlocks[index + 1];
    if (isIssueList(block) || isEvaluation(block)) {
      return;
    }
    if (isIssueList(next)) {
      it(`rejects example ${index} with the issues shown`, () => {
        expect(validateRecipe(block)).toEqual({ ok: false, issues: next });
      });
    } else {
      it(`accepts example ${index}`, () => {
        expect(validateRecipe(block)).toMatchObject({ ok: true });
      });
    }
  });

  it("scores the sample parcel 0.9167 under the first example, as worked", () => {
    const first = validateRecipe(jsonBlocks[0]);
    if (!first.ok) {
      throw new Error("the first example must be valid");
    }
    expect(evaluateRecipe(first.recipe, parcelIngested)).toMatchObject({
      matched: true,
      score: 0.9167,
    });
  });
});
