// The codebase's shape, kept: no function needs a scroll bar to read. Functions longer than the
// limit are listed with their current length as a ceiling, so each can only shrink until it is
// split, and no new one can grow past the limit unnoticed.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const LIMIT = 150;

/** Functions still to split, by file and name, with the length they may not exceed. */
const STILL_TO_SPLIT: Record<string, number> = {
  "bench/kafka-throughput.ts main": 173,
  "bench/support/scale-dispatcher.ts dispatcherDriver": 152,
  "packages/dev-broker/src/broker.ts startBroker": 249,
  "services/gateway/src/routes/dashboard-session.ts registerDashboardSessionRoutes": 248,
  "services/gateway/src/routes/export.ts registerExportRoutes": 182,
  "services/gateway/src/routes/leads.ts registerLeadRoutes": 176,
  "services/gateway/src/routes/mcp.ts serverFor": 163,
  "services/gateway/src/routes/team.ts registerTeamRoutes": 212,
  "services/gateway/src/routes/watchlists.ts registerWatchlistRoutes": 217,
  "services/gateway/src/routes/webhooks.ts registerWebhookRoutes": 195,
  "test/support/edge-stack.ts startEdgeStack": 244,
  "test/support/webhook-stack.ts startWebhookStack": 273,
};

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
  const long = sourceFiles().flatMap(longFunctionsOf);

  it(`has no function over ${LIMIT} lines but those still to split, none longer than listed`, () => {
    const over = long
      .filter(({ where, lines }) => lines > (STILL_TO_SPLIT[where] ?? LIMIT))
      .map(({ where, lines }) => `${where}: ${lines} lines`);
    expect(over).toEqual([]);
  });

  it("lists no function as still to split that is already short", () => {
    const present = new Set(long.map(({ where }) => where));
    expect(Object.keys(STILL_TO_SPLIT).filter((where) => !present.has(where))).toEqual([]);
  });
});
