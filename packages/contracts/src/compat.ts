import type { Type } from "avsc";

// Avro's resolution rules alone are looser than "additive only": a reader may
// drop a field and still read old records, yet consumers built against the
// older revision would then see records without a field they rely on. So a
// new revision must resolve in both directions (Confluent's FULL mode) and
// must keep every field and enum symbol it inherited.

interface RecordLike {
  readonly name: string | undefined;
  readonly fields: readonly {
    readonly name: string;
    readonly aliases: readonly string[];
    readonly type: Type;
  }[];
  readonly aliases?: readonly string[];
}

interface EnumLike {
  readonly name: string | undefined;
  readonly symbols: readonly string[];
  readonly aliases?: readonly string[];
}

interface NamedTypes {
  readonly records: Map<string, RecordLike>;
  readonly enums: Map<string, EnumLike>;
}

function collectNamed(root: Type): NamedTypes {
  const named: NamedTypes = { records: new Map(), enums: new Map() };
  const visit = (t: Type): void => {
    const any = t as unknown as Record<string, unknown>;
    switch (t.typeName) {
      case "record":
      case "error": {
        const rec = any as unknown as RecordLike;
        if (rec.name === undefined || named.records.has(rec.name)) {
          return;
        }
        named.records.set(rec.name, rec);
        for (const f of rec.fields) {
          visit(f.type);
        }
        return;
      }
      case "enum": {
        const en = any as unknown as EnumLike;
        if (en.name !== undefined) {
          named.enums.set(en.name, en);
        }
        return;
      }
      case "array":
        visit(any.itemsType as Type);
        return;
      case "map":
        visit(any.valuesType as Type);
        return;
      default:
        if (Array.isArray(any.types)) {
          for (const branch of any.types as Type[]) {
            visit(branch);
          }
        } else if (any.underlyingType) {
          visit(any.underlyingType as Type);
        }
    }
  };
  visit(root);
  return named;
}

function findRenamed<
  T extends { readonly name: string | undefined; readonly aliases?: readonly string[] },
>(pool: Map<string, T>, name: string): T | undefined {
  const direct = pool.get(name);
  if (direct) {
    return direct;
  }
  for (const candidate of pool.values()) {
    if (candidate.aliases?.includes(name)) {
      return candidate;
    }
  }
  return undefined;
}

function resolutionError(reader: Type, writer: Type): string | undefined {
  try {
    reader.createResolver(writer);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * Every reason `newType` is not an additive evolution of `oldType`; empty
 * when it is.
 */
export function compatibilityProblems(oldType: Type, newType: Type): string[] {
  const problems: string[] = [];

  const backward = resolutionError(newType, oldType);
  if (backward !== undefined) {
    problems.push(`the new schema cannot read records written with the old one: ${backward}`);
  }
  const forward = resolutionError(oldType, newType);
  if (forward !== undefined) {
    problems.push(`the old schema cannot read records written with the new one: ${forward}`);
  }

  const before = collectNamed(oldType);
  const after = collectNamed(newType);
  for (const [name, rec] of before.records) {
    const next = findRenamed(after.records, name);
    if (!next) {
      problems.push(`record ${name} was removed or renamed without an alias`);
      continue;
    }
    for (const field of rec.fields) {
      const kept = next.fields.some((f) => f.name === field.name || f.aliases.includes(field.name));
      if (!kept) {
        problems.push(`field ${name}.${field.name} was removed`);
      }
    }
  }
  for (const [name, en] of before.enums) {
    const next = findRenamed(after.enums, name);
    if (!next) {
      problems.push(`enum ${name} was removed or renamed without an alias`);
      continue;
    }
    for (const symbol of en.symbols) {
      if (!next.symbols.includes(symbol)) {
        problems.push(`enum ${name} lost symbol ${symbol}`);
      }
    }
  }
  return problems;
}

/**
 * Throws unless `newType` only adds to `oldType`: new fields carry defaults,
 * nothing is removed or retyped, and records resolve both ways. Run it for
 * every schema change against every shipped revision.
 */
export function assertBackwardCompatible(oldType: Type, newType: Type): void {
  const problems = compatibilityProblems(oldType, newType);
  if (problems.length > 0) {
    const label = newType.name ?? oldType.name ?? "schema";
    throw new Error(`${label} is not an additive change:\n- ${problems.join("\n- ")}`);
  }
}
