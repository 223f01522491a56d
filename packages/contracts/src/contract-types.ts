// The contracts' TypeScript types as generated from the schemas this package ships: the newest
// revision of each, with its docs. `avro-types.test.ts` holds the committed file to this.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { recordFields, renderAvroTypes } from "./avro-typescript.ts";
import { registry } from "./registry.ts";

export const CONTRACT_TYPES_FILE = join(import.meta.dirname, "generated", "avro-types.ts");

const SCHEMAS_DIR = join(import.meta.dirname, "..", "schemas");

const HEADER = `// Generated from the newest revision of each packages/contracts/schemas/**/*.avsc; do not edit.
// Regenerate: AVRO_TYPES_UPDATE=1 npm test -- packages/contracts/src/avro-types.test.ts
//
// Encodings shared by every record: instants are RFC 3339 UTC with milliseconds, exactly
// Date#toISOString(); days are YYYY-MM-DD UTC calendar days; money is whole US dollars in a long;
// a nullable field is an Avro ["null", T] with default null.
`;

const schemaOf = (file: string): unknown =>
  JSON.parse(readFileSync(join(SCHEMAS_DIR, file), "utf8"));

/** The fields (`Record.field`) of a schema's newest revision that an earlier one lacks. */
function fieldsAddedLater(name: string): Set<string> {
  const revisions = registry.history(name).map((version) => recordFields(schemaOf(version.file)));
  const current = revisions.at(-1) ?? new Map<string, Set<string>>();
  const added = new Set<string>();
  for (const [record, fields] of current) {
    for (const field of fields) {
      if (revisions.slice(0, -1).some((earlier) => !earlier.get(record)?.has(field))) {
        added.add(`${record}.${field}`);
      }
    }
  }
  return added;
}

export function renderContractTypes(): string {
  const names = registry.names();
  return renderAvroTypes(
    names.map((name) => schemaOf(registry.current(name).file)),
    HEADER,
    new Set(names.flatMap((name) => [...fieldsAddedLater(name)])),
  );
}
