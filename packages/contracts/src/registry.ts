import { readdirSync, readFileSync } from "node:fs";
import type { Type } from "avsc";
import avro from "avsc";

/**
 * One shipped revision of a schema. Revisions live in
 * `schemas/<domain>/<Name>.v<N>.avsc`; every file ever released stays in the
 * tree so records written with it can still be decoded.
 */
export interface SchemaVersion {
  readonly schemaName: string;
  readonly version: number;
  readonly file: string;
  readonly type: Type;
  readonly fingerprint: string;
}

const SCHEMA_FILE = /^([A-Za-z_][A-Za-z0-9_]*)\.v([1-9][0-9]*)\.avsc$/;

/**
 * Plain JS values in and out: nullable unions decode to `null | T` rather than
 * wrapped `{string: ...}` objects, and decoded records carry no methods, so
 * they match the hand-written interfaces structurally.
 */
export function parseSchema(schema: unknown): Type {
  return avro.Type.forSchema(schema as Parameters<typeof avro.Type.forSchema>[0], {
    wrapUnions: "never",
    omitRecordMethods: true,
  });
}

/** Hex SHA-256 of the Parsing Canonical Form, so docs and defaults do not move it. */
export function fingerprintOf(type: Type): string {
  return type.fingerprint("sha256").toString("hex");
}

export interface SchemaRegistry {
  /** Every shipped revision of `schemaName`, oldest first. */
  history(schemaName: string): readonly SchemaVersion[];
  /** The newest revision, which is the reader schema consumers use. */
  current(schemaName: string): SchemaVersion;
  names(): readonly string[];
  /** The revision a `th-schema` header value names, if it was ever shipped. */
  forHeader(headerValue: string): SchemaVersion | undefined;
}

/** Loads every `<domain>/<Name>.v<N>.avsc` under `root` (a directory URL ending in "/"). */
export function loadSchemaRegistry(root: URL): SchemaRegistry {
  const history = new Map<string, SchemaVersion[]>();
  for (const domain of readdirSync(root, { withFileTypes: true })) {
    if (!domain.isDirectory()) {
      continue;
    }
    const dirUrl = new URL(`${domain.name}/`, root);
    for (const file of readdirSync(dirUrl)) {
      if (!file.endsWith(".avsc")) {
        continue;
      }
      const m = SCHEMA_FILE.exec(file);
      if (!m?.[1] || !m[2]) {
        throw new Error(`schema file ${domain.name}/${file} must be named <Name>.v<N>.avsc`);
      }
      const type = parseSchema(JSON.parse(readFileSync(new URL(file, dirUrl), "utf8")));
      const schemaName = type.name;
      if (schemaName === undefined || schemaName.split(".").pop() !== m[1]) {
        throw new Error(`${domain.name}/${file} defines ${schemaName ?? "an anonymous type"}`);
      }
      const versions = history.get(schemaName) ?? [];
      versions.push({
        schemaName,
        version: Number(m[2]),
        file: `${domain.name}/${file}`,
        type,
        fingerprint: fingerprintOf(type),
      });
      history.set(schemaName, versions);
    }
  }

  const byHeader = new Map<string, SchemaVersion>();
  for (const [name, versions] of history) {
    versions.sort((a, b) => a.version - b.version);
    versions.forEach((v, i) => {
      // A gap means a shipped file was deleted, and its records would no longer decode.
      if (v.version !== i + 1) {
        throw new Error(`${name}: versions must run 1..N without gaps, found v${v.version}`);
      }
      // Revisions differing only in docs or defaults share a fingerprint and
      // are identical on the wire, so the first one is as good a writer as any.
      const key = `${v.schemaName}@${v.fingerprint}`;
      if (!byHeader.has(key)) {
        byHeader.set(key, v);
      }
    });
  }

  return {
    history: (schemaName) => history.get(schemaName) ?? [],
    current: (schemaName) => {
      const versions = history.get(schemaName);
      const latest = versions?.[versions.length - 1];
      if (!latest) {
        throw new Error(`no schema file defines ${schemaName}`);
      }
      return latest;
    },
    names: () => [...history.keys()].sort(),
    forHeader: (headerValue) => byHeader.get(headerValue.trim()),
  };
}

/** The schemas this package ships. */
export const registry: SchemaRegistry = loadSchemaRegistry(new URL("../schemas/", import.meta.url));
