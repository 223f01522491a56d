// docs/spec-coverage.md maps each rule of the specification to the test that proves it. A renamed
// or deleted test would leave a row naming nothing, so every link is checked against the tests
// its file declares: the names given to it, test and describe, read from the file's syntax tree,
// not any text that happens to be in the file (a comment, a string, another test's body).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const docs = join(import.meta.dirname, "..", "docs");
const coverage = readFileSync(join(docs, "spec-coverage.md"), "utf8");

interface TestLink {
  row: string;
  name: string;
  path: string;
}

/** The table rows of the document (header and separator rows left out). */
function ruleRows(text: string): string[] {
  return text
    .split("\n")
    .filter(
      (line) => line.startsWith("| ") && !line.startsWith("| Rule") && !line.startsWith("| ---"),
    );
}

/** Links of the form `[file › test name](../path#Lnn)` in one row. */
function testLinks(row: string): TestLink[] {
  const links: TestLink[] = [];
  for (const match of row.matchAll(
    /\[[^\]›]+ › ((?:[^\]]|\](?!\())+)\]\(\.\.\/([^)#]+)(?:#L\d+)?\)/g,
  )) {
    links.push({ row: row.slice(0, 40), name: match[1] as string, path: match[2] as string });
  }
  return links;
}

const TEST_FUNCTIONS = new Set(["it", "test", "describe"]);

/** The identifier a callee starts from: `it` for `it.each(rows)` or `describe.skipIf(x)`. */
function rootOf(callee: ts.Expression): string | undefined {
  let at: ts.Expression = callee;
  for (;;) {
    if (ts.isIdentifier(at)) {
      return at.text;
    }
    if (ts.isPropertyAccessExpression(at) || ts.isCallExpression(at)) {
      at = at.expression;
    } else {
      return undefined;
    }
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A test's name as a pattern: its text exactly; a `${…}` of a template, or a `%s`-style or
 * `$name` placeholder of `.each`, stands for any text.
 */
function namePattern(node: ts.Expression): RegExp | undefined {
  let parts: string[];
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
    parts = [node.text];
  } else if (ts.isTemplateExpression(node)) {
    parts = [node.head.text, ...node.templateSpans.map((span) => span.literal.text)];
  } else {
    return undefined;
  }
  const source = parts
    .map((part) =>
      escapeRegExp(part).replace(/%[sdifjo#%]|\\\$[A-Za-z_][\w.]*/g, (token) =>
        token === "%%" ? "%" : ".+",
      ),
    )
    .join(".+");
  return new RegExp(`^${source}$`, "s");
}

/** The names a test file gives its tests and blocks, read from its syntax tree. */
export function declaredNames(source: string, fileName = "test.ts"): RegExp[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const names: RegExp[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && TEST_FUNCTIONS.has(rootOf(node.expression) ?? "")) {
      const first = node.arguments[0];
      const pattern = first && namePattern(first);
      if (pattern) {
        names.push(pattern);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return names;
}

/** Whether the file declares a test (or a block) of that name. */
function declares(source: string, name: string, fileName?: string): boolean {
  return declaredNames(source, fileName).some((pattern) => pattern.test(name));
}

describe("docs/spec-coverage.md", () => {
  const rows = ruleRows(coverage);

  it("names at least one test in every row", () => {
    expect(rows.length).toBeGreaterThan(90);
    expect(rows.filter((row) => testLinks(row).length === 0)).toEqual([]);
  });

  it("names only tests that exist, by their names, in the files it links", () => {
    const missing = rows.flatMap(testLinks).filter((link) => {
      const file = join(docs, "..", link.path);
      return !existsSync(file) || !declares(readFileSync(file, "utf8"), link.name, file);
    });
    expect(missing).toEqual([]);
  });

  it("finds a name only where a test or block declares it, not in a comment, a string or a test's body", () => {
    const file = `
      // answers 201 without a key
      const note = "answers 202 without a key";
      describe("the edge", () => {
        it("answers 200 without a key", () => {
          expect("answers 203 without a key").toBeTruthy();
        });
        it.each(["200"])("%s completes", () => {});
        it.each([{ tier: "team" }])("a $tier admin signs in", () => {});
        it(\`streams a \${ROWS}-row export\`, () => {});
        describe.skipIf(noChromium)("in a browser", () => {});
        test(
          "spans two lines",
          () => {},
        );
      });
    `;
    expect(declares(file, "answers 200 without a key")).toBe(true);
    expect(declares(file, "the edge")).toBe(true);
    for (const text of [
      "answers 201 without a key",
      "answers 202 without a key",
      "answers 203 without a key",
    ]) {
      expect(declares(file, text), text).toBe(false);
    }
    expect(declares(file, "201 completes")).toBe(true);
    expect(declares(file, "a team admin signs in")).toBe(true);
    expect(declares(file, "streams a 10000-row export")).toBe(true);
    expect(declares(file, "streams a 10000-row import")).toBe(false);
    expect(declares(file, "in a browser")).toBe(true);
    expect(declares(file, "spans two lines")).toBe(true);
    expect(declares(file, "answers 200 without a key, and more")).toBe(false);
  });
});
