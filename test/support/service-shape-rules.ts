// The rules of test/service-shape.test.ts as pure functions of a path, an import or a string, so
// test/service-shape-rules.test.ts can show each break caught without reading the repository.
import { dirname, join, relative, resolve } from "node:path";

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

/**
 * The service folders that do I/O; domain/ reaches none of them. Beyond the layout's own (db/,
 * clients/, routes/, consumers/), the folders of docs/architecture.md that compose rules with
 * queries, sockets or the Kafka client: the gateway's edge/, the matcher's matching/, the parcel
 * ingest's ingest/, the dispatcher's delivery/ and endpoints/.
 */
const IO_FOLDERS = [
  "db",
  "clients",
  "delivery",
  "routes",
  "consumers",
  "edge",
  "matching",
  "ingest",
  "endpoints",
];

/** The service folders that are not I/O: the pure rules, and the fixtures of the tests. */
const OTHER_FOLDERS = ["domain", "testing"];

/**
 * Imports of an impure package that a domain file may still make, by file, package and the
 * names it may import, each with why they are pure.
 */
export const ALLOWED_DOMAIN_IMPORTS: Record<
  string,
  { from: string; names: string[]; why: string }
> = {
  "services/webhook-dispatcher/src/domain/address.ts": {
    from: "node:net",
    names: ["BlockList", "isIP"],
    why: "an in-memory address list and an address parser; neither opens a socket",
  },
};

/**
 * Where a package's source may hold SQL, by path prefix, each with why. In a service SQL sits in
 * db/; a package has no such folder, so its homes are named here.
 */
export const PACKAGE_SQL_HOMES: Record<string, string> = {
  "packages/db/src/": "the database package: pools, migrations, COPY and the test databases",
  "packages/service-kit/src/outbox":
    "the kit owns the outbox: its table, the relay's claim and the purge",
  "packages/service-kit/src/retention.ts":
    "the kit owns the retention of partitioned tables: it creates and drops their partitions",
};

/**
 * Where a package's source may read the environment, by path prefix, each with why. A service
 * reads it only in config.ts.
 */
export const PACKAGE_ENVIRONMENT_READERS: Record<string, string> = {
  "packages/config/src/": "the config package: the one schema every service's config.ts reads",
  "packages/test-stores/src/":
    "test fixtures: the run's choice of stores is handed to the test processes through it",
  "packages/db/src/testing.ts": "a test fixture: the database of the test run",
  "packages/dashboard/src/build.ts":
    "the dashboard's build, not a service: it undoes the bundler's change to the environment",
};

/** An import or re-export of a file, with the names it takes (`*` for all, `default`). */
export interface Import {
  from: string;
  names: string[];
}

/** A statement's keyword in upper case, followed by any white space (a space, a line break). */
const SQL_KEYWORD =
  /\b(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|WITH|COPY|LISTEN|UNLISTEN|NOTIFY|TRUNCATE|(CREATE|ALTER|DROP)\s+(TABLE|INDEX|UNIQUE\s+INDEX|SCHEMA|EXTENSION|FUNCTION|TRIGGER|TYPE|SEQUENCE|VIEW))\s/;

/**
 * A statement in any case, as a string opens with it. Lower-case English opens with these words
 * too ("select a plan"), so each needs the shape SQL gives it: a column list, a table and SET.
 */
const SQL_STATEMENT =
  /^\s*\(?\s*(select\s+(\*|distinct\s|[\w."]+\s*(,|\bfrom\s|\bas\s))|insert\s+into\s+[\w."]+\s*[(\s]|update\s+[\w."]+\s+set\s|delete\s+from\s+[\w."]+|(un)?listen\s+[\w"]+\s*;?\s*$|notify\s+[\w"]+\s*[,;]?\s*$)/i;

/** A common table expression in any case, wherever it stands: `with x as (`. */
const SQL_CTE =
  /\bwith\s+(recursive\s+)?[\w"]+(\s*\([^)]*\))?\s+as\s+((not\s+)?materialized\s+)?\(/i;

/** COPY in any case, wherever it stands: `copy t (a, b) from stdin`, `copy (query) to stdout`. */
const SQL_COPY = /\bcopy\s+([\w."]+(\s*\([^)]*\))?|\([\s\S]*\))\s+(from|to)\s+(stdin|stdout)\b/i;

/** Whether a string (a literal, or a piece of a template) holds SQL. */
export function looksLikeSql(text: string): boolean {
  return (
    SQL_KEYWORD.test(text) || SQL_STATEMENT.test(text) || SQL_CTE.test(text) || SQL_COPY.test(text)
  );
}

/** The service folder a relative import lands in (`db`, `routes`, ...), or undefined. */
export function folderReached(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) {
    return undefined;
  }
  const target = relative("/", resolve("/", dirname(file), specifier));
  const match = /^services\/[^/]+\/src\/([^/]+)\//.exec(target);
  return match?.[1];
}

function impurePackageOf(specifier: string): string | undefined {
  if (PURE_ENTRY_POINTS.has(specifier)) {
    return undefined;
  }
  return IMPURE_PACKAGES.find((name) => specifier === name || specifier.startsWith(`${name}/`));
}

/** Why a domain file's import breaks the shape, or undefined when it is pure. */
export function impurity(file: string, found: Import): string | undefined {
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

/** A service's top-level src/ folders that the rules do not classify as I/O, pure or fixtures. */
export function unclassifiedFolders(service: string, folders: readonly string[]): string[] {
  return folders
    .filter((folder) => !IO_FOLDERS.includes(folder) && !OTHER_FOLDERS.includes(folder))
    .map((folder) => `services/${service}/src/${folder}/`);
}

function listedUnder(file: string, homes: Record<string, string>): boolean {
  return Object.keys(homes).some((prefix) => file.startsWith(prefix));
}

/**
 * Whether a file may hold SQL: a service's db/, a package's named home, or a service's test
 * fixtures in src/testing/ (which production code may not import), which set up and empty stores.
 */
export function maySql(file: string): boolean {
  return /^services\/[^/]+\/src\/(db|testing)\//.test(file) || listedUnder(file, PACKAGE_SQL_HOMES);
}

/** Whether a production file may read `process.env`: a service's config.ts, or a named reader. */
export function mayReadEnvironment(file: string): boolean {
  return (
    /^services\/[^/]+\/src\/config\.ts$/.test(file) ||
    listedUnder(file, PACKAGE_ENVIRONMENT_READERS)
  );
}

/**
 * The service an import of `file` reaches, when it is not `file`'s own: by a relative path into
 * services/, or by a service's package name (`@th/<service>`, with any entry point).
 */
export function serviceReached(
  file: string,
  specifier: string,
  services: readonly string[],
): string | undefined {
  const own = /^services\/([^/]+)\//.exec(file)?.[1];
  let reached: string | undefined;
  if (specifier.startsWith(".")) {
    const target = join(dirname(file), specifier);
    reached = /^services\/([^/]+)(\/|$)/.exec(target)?.[1];
  } else {
    const name = /^@th\/([^/]+)/.exec(specifier)?.[1];
    reached = name !== undefined && services.includes(name) ? name : undefined;
  }
  return reached !== undefined && reached !== own ? reached : undefined;
}
