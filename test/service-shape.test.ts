// The service layout of docs/architecture.md, kept: every service has its entry, app, config,
// domain and db; domain/ is pure (nothing that does I/O, nothing of the service's I/O layers);
// SQL sits in db/; and only config.ts reads the environment. Tests beside the source may read
// fixtures and the environment, so the rules below read the production files.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const servicesDir = join(root, "services");

/** The gateway owns no Postgres schema (its state is in Redis), so it has no db/ either. */
const WITHOUT_DATABASE = new Set(["gateway"]);

/** Packages that do I/O or reach the service's infrastructure; domain/ imports none of them. */
const IMPURE_PACKAGES = [
  "pg",
  "ioredis",
  "kafkajs",
  "undici",
  "node:net",
  "node:fs",
  "@th/db",
  "@th/bus",
  "@th/service-kit",
];

/** Entry points of an impure package that are pure and may be imported by domain/. */
const PURE_ENTRY_POINTS = new Set(["@th/service-kit/cursor"]);

/** The service folders that do I/O; domain/ reaches none of them. */
const IO_FOLDERS = ["db", "clients", "delivery", "routes", "consumers"];

/**
 * Imports of an impure package that a domain file may still make, by file, package and the
 * names it may import, each with why they are pure.
 */
const ALLOWED_DOMAIN_IMPORTS: Record<string, { from: string; names: string[]; why: string }> = {
  "services/webhook-dispatcher/src/domain/address.ts": {
    from: "node:net",
    names: ["BlockList", "isIP"],
    why: "an in-memory address list and an address parser; neither opens a socket",
  },
};

/** Source files outside db/ whose strings may hold SQL, each with why it is not in db/. */
const SQL_OUTSIDE_DB: Record<string, string> = {};

const SQL = /SELECT |INSERT INTO|UPDATE |DELETE FROM|LISTEN /;

function services(): string[] {
  return readdirSync(servicesDir)
    .filter((name) => existsSync(join(servicesDir, name, "src")))
    .sort();
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) {
    return [];
  }
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (entry === "node_modules") {
      return [];
    }
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

function isSource(path: string): boolean {
  return /\.tsx?$/.test(path) && !/\.test\.tsx?$/.test(path) && !path.endsWith(".d.ts");
}

/** Production source of every service, as paths from the repository root. */
function serviceSources(): string[] {
  return services().flatMap((name) =>
    filesUnder(join(servicesDir, name, "src"))
      .filter(isSource)
      .map((path) => relative(root, path)),
  );
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(join(root, file), "utf8"), ts.ScriptTarget.Latest);
}

function walk(node: ts.Node, visit: (node: ts.Node) => void): void {
  visit(node);
  node.forEachChild((child) => walk(child, visit));
}

interface Import {
  from: string;
  names: string[];
}

/** Every module a file imports or re-exports, with the names it takes. */
function importsOf(file: string): Import[] {
  const found: Import[] = [];
  walk(parse(file), (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const names: string[] = [];
      const bindings = ts.isImportDeclaration(node)
        ? node.importClause?.namedBindings
        : node.exportClause;
      if (bindings !== undefined && (ts.isNamedImports(bindings) || ts.isNamedExports(bindings))) {
        names.push(...bindings.elements.map((element) => element.name.text));
      }
      if (ts.isImportDeclaration(node) && node.importClause?.name !== undefined) {
        names.push("default");
      }
      if (bindings !== undefined && ts.isNamespaceImport(bindings)) {
        names.push("*");
      }
      found.push({ from: node.moduleSpecifier.text, names });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ from: node.arguments[0].text, names: ["*"] });
    }
  });
  return found;
}

function impurePackageOf(specifier: string): string | undefined {
  if (PURE_ENTRY_POINTS.has(specifier)) {
    return undefined;
  }
  return IMPURE_PACKAGES.find((name) => specifier === name || specifier.startsWith(`${name}/`));
}

/** The service folder a relative import lands in (`db`, `routes`, ...), or undefined. */
function folderReached(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) {
    return undefined;
  }
  const target = relative(root, resolve(root, dirname(file), specifier));
  const match = /^services\/[^/]+\/src\/([^/]+)\//.exec(target);
  return match?.[1];
}

/** Why a domain file's import breaks the shape, or undefined when it is pure. */
function impurity(file: string, found: Import): string | undefined {
  const folder = folderReached(file, found.from);
  if (folder !== undefined && IO_FOLDERS.includes(folder)) {
    return `${file} imports ${found.from} (${folder}/)`;
  }
  const impure = impurePackageOf(found.from);
  if (impure === undefined) {
    return undefined;
  }
  const allowed = ALLOWED_DOMAIN_IMPORTS[file];
  if (allowed?.from === found.from && found.names.every((name) => allowed.names.includes(name))) {
    return undefined;
  }
  return `${file} imports ${found.names.join(", ")} from ${found.from}`;
}

/** Domain files' imports that break the shape. */
function impureDomainImports(files: string[]): string[] {
  return files
    .filter((file) => /^services\/[^/]+\/src\/domain\//.test(file))
    .flatMap((file) => importsOf(file).map((found) => impurity(file, found)))
    .filter((problem): problem is string => problem !== undefined);
}

/** The text of a file's string literals and template pieces, where SQL would be written. */
function stringsOf(file: string): string[] {
  const found: string[] = [];
  walk(parse(file), (node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      found.push(node.text);
    }
  });
  return found;
}

function sqlOutsideDb(files: string[]): string[] {
  return files.filter(
    (file) =>
      !/^services\/[^/]+\/src\/db\//.test(file) &&
      SQL_OUTSIDE_DB[file] === undefined &&
      stringsOf(file).some((text) => SQL.test(text)),
  );
}

/** `process.env` reads, as `file:line`. */
function environmentReads(file: string): string[] {
  const source = parse(file);
  const found: string[] = [];
  walk(source, (node) => {
    if (
      ts.isPropertyAccessExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === "process" &&
      node.name.text === "env"
    ) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${file}:${line + 1}`);
    }
  });
  return found;
}

function environmentOutsideConfig(files: string[]): string[] {
  return files
    .filter((file) => !/^services\/[^/]+\/src\/config\.ts$/.test(file))
    .flatMap(environmentReads);
}

/** Relative imports from one service's source (tests included) into another service. */
function crossServiceImports(): string[] {
  return services().flatMap((name) =>
    filesUnder(join(servicesDir, name, "src"))
      .filter((path) => /\.tsx?$/.test(path))
      .map((path) => relative(root, path))
      .flatMap((file) =>
        importsOf(file)
          .filter((found) => found.from.startsWith("."))
          .map((found) => ({
            found,
            target: relative(root, resolve(root, dirname(file), found.from)),
          }))
          .filter(({ target }) => !target.startsWith(`services/${name}/`))
          .map(({ found }) => `${file} imports ${found.from}`),
      ),
  );
}

/** Production files that import a service's test fixtures in `src/testing/`. */
function fixturesInProduction(files: string[]): string[] {
  return files
    .filter((file) => !/^services\/[^/]+\/src\/testing\//.test(file))
    .flatMap((file) =>
      importsOf(file)
        .filter((found) => folderReached(file, found.from) === "testing")
        .map((found) => `${file} imports ${found.from}`),
    );
}

/** What a service's src/ lacks of the documented layout. */
function missingParts(name: string): string[] {
  const src = join(servicesDir, name, "src");
  const required = ["main.ts", "app.ts", "config.ts", "domain"];
  if (!WITHOUT_DATABASE.has(name)) {
    required.push("db");
  }
  const missing = required.filter((part) => !existsSync(join(src, part)));
  if (!existsSync(join(src, "routes")) && !existsSync(join(src, "consumers"))) {
    missing.push("routes/ or consumers/");
  }
  if (WITHOUT_DATABASE.has(name) && existsSync(join(src, "db"))) {
    missing.push("no db/ (it owns no schema)");
  }
  const app = join(src, "app.ts");
  if (existsSync(app) && !/export (async )?function buildApp\(/.test(readFileSync(app, "utf8"))) {
    missing.push("buildApp in app.ts");
  }
  return missing.map((part) => `${name}: ${part}`);
}

describe("the service layout of docs/architecture.md", () => {
  const files = serviceSources();

  it("gives every service main.ts, app.ts with buildApp, config.ts, domain/, db/ and routes/ or consumers/", () => {
    expect(services().length).toBeGreaterThan(0);
    expect(services().flatMap(missingParts)).toEqual([]);
  });

  it("keeps domain/ pure: no I/O packages and no imports of the service's I/O folders", () => {
    expect(impureDomainImports(files)).toEqual([]);
  });

  it("lists only domain imports that are still made", () => {
    const stale = Object.entries(ALLOWED_DOMAIN_IMPORTS)
      .filter(([file, allowed]) => !importsOf(file).some((found) => found.from === allowed.from))
      .map(([file]) => file);
    expect(stale).toEqual([]);
  });

  it("writes SQL only in db/", () => {
    expect(sqlOutsideDb(files)).toEqual([]);
  });

  it("reads process.env only in config.ts", () => {
    expect(environmentOutsideConfig(files)).toEqual([]);
  });

  it("lets no service import another's source, not even in its tests", () => {
    expect(crossServiceImports()).toEqual([]);
  });

  it("keeps the fixtures of src/testing/ out of the service's production code", () => {
    expect(fixturesInProduction(files)).toEqual([]);
  });

  it("recognises each kind of break", () => {
    const domain = "services/example/src/domain/rule.ts";
    expect(impurity(domain, { from: "../db/rows.ts", names: ["x"] })).toContain("db/");
    expect(impurity(domain, { from: "../delivery/send.ts", names: ["x"] })).toContain("delivery/");
    expect(impurity(domain, { from: "pg", names: ["Pool"] })).toBeDefined();
    expect(impurity(domain, { from: "node:fs/promises", names: ["readFile"] })).toBeDefined();
    expect(impurity(domain, { from: "@th/service-kit", names: ["ApiError"] })).toBeDefined();
    expect(impurity(domain, { from: "@th/service-kit/cursor", names: ["x"] })).toBeUndefined();
    expect(impurity(domain, { from: "./score.ts", names: ["x"] })).toBeUndefined();
    expect(
      impurity("services/webhook-dispatcher/src/domain/address.ts", {
        from: "node:net",
        names: ["connect"],
      }),
    ).toBeDefined();
    expect(SQL.test("UPDATE runs SET x = 1")).toBe(true);
    expect(SQL.test("UNLISTEN matcher_watchlists")).toBe(true);
  });
});
