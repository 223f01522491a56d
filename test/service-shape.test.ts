// The service layout of docs/architecture.md, kept: every service has its entry, app, config,
// domain and db; domain/ is pure (nothing that does I/O, nothing of the service's I/O layers);
// SQL sits in db/; and only config.ts reads the environment. Packages keep the rules that apply
// to them: their SQL and environment reads only where ./support/service-shape-rules.ts names,
// and no import of a service. (No package has a domain/ or the service layout, so those rules
// stay with the services.) Tests beside the source may read fixtures and the environment, so
// the rules below read the production files; the rules themselves are tested on their own in
// service-shape-rules.test.ts.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import {
  ALLOWED_DOMAIN_IMPORTS,
  folderReached,
  type Import,
  impurity,
  looksLikeSql,
  mayReadEnvironment,
  maySql,
  PACKAGE_ENVIRONMENT_READERS,
  PACKAGE_SQL_HOMES,
  serviceReached,
  unclassifiedFolders,
} from "./support/service-shape-rules.ts";

const root = join(import.meta.dirname, "..");
const servicesDir = join(root, "services");

/** The gateway owns no Postgres schema (its state is in Redis), so it has no db/ either. */
const WITHOUT_DATABASE = new Set(["gateway"]);

const packagesDir = join(root, "packages");

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

function packages(): string[] {
  return readdirSync(packagesDir)
    .filter((name) => existsSync(join(packagesDir, name, "src")))
    .sort();
}

/** Production source of every service, as paths from the repository root. */
function serviceSources(): string[] {
  return services().flatMap((name) =>
    filesUnder(join(servicesDir, name, "src"))
      .filter(isSource)
      .map((path) => relative(root, path)),
  );
}

/** Every source file of every package, tests included, as paths from the repository root. */
function packageFiles(): string[] {
  return packages().flatMap((name) =>
    filesUnder(join(packagesDir, name, "src"))
      .filter((path) => /\.tsx?$/.test(path))
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
  return files.filter((file) => !maySql(file) && stringsOf(file).some(looksLikeSql));
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
  return files.filter((file) => !mayReadEnvironment(file)).flatMap(environmentReads);
}

/** Named homes (path prefixes) under which no production file does what the home is named for. */
function staleHomes(
  homes: Record<string, string>,
  files: string[],
  does: (file: string) => boolean,
) {
  return Object.keys(homes).filter(
    (prefix) => !files.some((file) => file.startsWith(prefix) && does(file)),
  );
}

/** Imports from a package's source (tests included) of a service, by path or by package name. */
function packageImportsOfServices(): string[] {
  return packageFiles().flatMap((file) =>
    importsOf(file)
      .filter((found) => serviceReached(file, found.from, services()) !== undefined)
      .map((found) => `${file} imports ${found.from}`),
  );
}

/** Imports from one service's source (tests included) of another, by path or by package name. */
function crossServiceImports(): string[] {
  return services().flatMap((name) =>
    filesUnder(join(servicesDir, name, "src"))
      .filter((path) => /\.tsx?$/.test(path))
      .map((path) => relative(root, path))
      .flatMap((file) =>
        importsOf(file)
          .filter((found) => serviceReached(file, found.from, services()) !== undefined)
          .map((found) => `${file} imports ${found.from}`),
      ),
  );
}

/** Top-level src/ folders of the services that the rules do not know as I/O, pure or fixtures. */
function unknownFolders(): string[] {
  return services().flatMap((name) => {
    const src = join(servicesDir, name, "src");
    const folders = readdirSync(src).filter((entry) => statSync(join(src, entry)).isDirectory());
    return unclassifiedFolders(name, folders);
  });
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

  it("knows every top-level folder of a service as I/O, pure or fixtures", () => {
    expect(unknownFolders()).toEqual([]);
  });

  it("lets no service import another's source, not even in its tests", () => {
    expect(crossServiceImports()).toEqual([]);
  });

  it("keeps the fixtures of src/testing/ out of the service's production code", () => {
    expect(fixturesInProduction(files)).toEqual([]);
  });
});

describe("the rules of docs/architecture.md that packages keep too", () => {
  const files = packageFiles().filter(isSource);

  it("writes a package's SQL only in its named homes", () => {
    expect(files.length).toBeGreaterThan(0);
    expect(sqlOutsideDb(files)).toEqual([]);
  });

  it("lists only SQL homes that still hold SQL", () => {
    expect(
      staleHomes(PACKAGE_SQL_HOMES, files, (file) => stringsOf(file).some(looksLikeSql)),
    ).toEqual([]);
  });

  it("reads process.env in a package only where it is named", () => {
    expect(environmentOutsideConfig(files)).toEqual([]);
  });

  it("lists only environment readers that still read it", () => {
    expect(
      staleHomes(PACKAGE_ENVIRONMENT_READERS, files, (file) => environmentReads(file).length > 0),
    ).toEqual([]);
  });

  it("lets no package import a service, not even in its tests", () => {
    expect(packageImportsOfServices()).toEqual([]);
  });
});
