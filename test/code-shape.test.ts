// The codebase's shape, kept: no function needs a scroll bar to read.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const LIMIT = 150;

interface LongFunction {
  where: string;
  lines: number;
}

function sourceFiles(): string[] {
  return execFileSync("git", ["ls-files", "*.ts", "*.tsx"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter((file) => file.length > 0 && !file.endsWith(".d.ts") && !file.includes("generated"));
}

function nameOf(node: ts.FunctionLikeDeclaration): string | null {
  if (node.name !== undefined) {
    return node.name.getText();
  }
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText();
  }
  return null;
}

/** A test file's suites are callbacks of describe/it: they are lists of cases, not functions. */
function isTestCallback(file: string, node: ts.FunctionLikeDeclaration): boolean {
  return /\.test\.tsx?$/.test(file) && node.name === undefined && ts.isCallExpression(node.parent);
}

function longFunctionsOf(file: string): LongFunction[] {
  const source = ts.createSourceFile(
    file,
    readFileSync(join(root, file), "utf8"),
    ts.ScriptTarget.Latest,
    true,
  );
  const found: LongFunction[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const fn = node as ts.FunctionLikeDeclaration;
      const first = source.getLineAndCharacterOfPosition(fn.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(fn.end).line;
      const lines = last - first + 1;
      if (lines > LIMIT && !isTestCallback(file, fn)) {
        found.push({ where: `${file} ${nameOf(fn) ?? `<anonymous at ${first + 1}>`}`, lines });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("code shape", () => {
  it(`has no function over ${LIMIT} lines outside generated code`, () => {
    const over = sourceFiles()
      .flatMap(longFunctionsOf)
      .filter(({ lines }) => lines > LIMIT)
      .map(({ where, lines }) => `${where}: ${lines} lines`);
    expect(over).toEqual([]);
  });
});
