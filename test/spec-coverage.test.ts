// docs/spec-coverage.md maps each rule of the specification to the test that proves it. A renamed
// or deleted test would leave a row naming nothing, so every link is checked against its file.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
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

/** Whether the file declares a test (or a block) of that name, `it.each`'s `%s` included. */
function declares(source: string, name: string): boolean {
  if (source.includes(name)) {
    return true;
  }
  const [, rest] = /^\S+ (.+)$/.exec(name) ?? [];
  return rest !== undefined && source.includes(`%s ${rest}`);
}

describe("docs/spec-coverage.md", () => {
  const rows = ruleRows(coverage);

  it("names at least one test in every row", () => {
    expect(rows.length).toBeGreaterThan(90);
    expect(rows.filter((row) => testLinks(row).length === 0)).toEqual([]);
  });

  it("names only tests that exist, in the files it links", () => {
    const missing = rows.flatMap(testLinks).filter((link) => {
      const file = join(docs, "..", link.path);
      return !existsSync(file) || !declares(readFileSync(file, "utf8"), link.name);
    });
    expect(missing).toEqual([]);
  });

  it("finds a test named in a row only when its file declares it", () => {
    expect(declares('it("answers 200 without a key", () => {})', "answers 200 without a key")).toBe(
      true,
    );
    expect(declares('it.each(["200"])("%s completes", () => {})', "201 completes")).toBe(true);
    expect(declares('it("answers 200 without a key", () => {})', "answers 201 without a key")).toBe(
      false,
    );
  });
});
