import { ValueEncoder } from "@th/bus";
import { contracts, type ParcelIngested, type Sale, schemaHeaderValue } from "@th/contracts";

/**
 * The `parcel.ingested` schema `ParcelRecords` writes by hand. Any other schema (a new revision)
 * is written by avsc until the writer below follows it; a test fails meanwhile.
 */
export const HAND_WRITTEN_SCHEMA =
  "th.parcels.ParcelIngested@299e4b909cea2f6ab7d01ffd4b549b28b6bbf17bf010f82915fd6891c6bf5025";

/** The values `ParcelRecords` writes this schema with, or avsc for another one. */
export function writesByHand(): boolean {
  return schemaHeaderValue(contracts.parcelIngested) === HAND_WRITTEN_SCHEMA;
}

/** An enum's symbols by position, read from the schema rather than written out again. */
function enumIndex(path: readonly string[]): ReadonlyMap<string, number> {
  let type = contracts.parcelIngested.type as unknown as {
    fields?: { name: string; type: unknown }[];
    types?: unknown[];
    symbols?: string[];
  };
  for (const name of path) {
    const field = type.fields?.find((candidate) => candidate.name === name);
    type = field?.type as typeof type;
    // A nullable field's type is the union's non-null branch.
    const branch = type?.types?.find((item) => (item as { typeName?: string }).typeName !== "null");
    type = (branch ?? type) as typeof type;
  }
  return new Map((type?.symbols ?? []).map((symbol, index) => [symbol, index]));
}

const EMPTY = Buffer.alloc(0);

const ROLL_STAGES = enumIndex(["roll_stage"]);
const USE_CLASSES = enumIndex(["land_use", "use_class"]);

/** The largest magnitude avsc writes as a long: one short of `Number.MAX_SAFE_INTEGER`. */
const MAX_LONG = 9007199254740990;
const MIN_LONG_AS_INT = -1073741824;
const MAX_LONG_AS_INT = 1073741824;

/**
 * Encodes `parcel.ingested` records back to back into one growing buffer, byte for byte as avsc
 * writes them (decision 0160). avsc measured each string with `Buffer.byteLength` and then copied
 * it a character at a time, looked each union's branch up by the value's kind and wrote through a
 * cursor object per record: about 4.7 µs a parcel on the ingest's hot path, against about 2 µs
 * written field by field here with one native call per string.
 */
export class ParcelRecords {
  #buffer: Buffer;
  #pos = 0;
  readonly #ends: number[] = [];
  readonly #fallback: ValueEncoder<ParcelIngested> | null;

  readonly #expected: number;

  /** `expectedRecords`: about how many records will be added; room for them is taken at the first. */
  constructor(expectedRecords = 64) {
    this.#buffer = EMPTY;
    this.#expected = expectedRecords;
    this.#fallback = writesByHand() ? null : new ValueEncoder(contracts.parcelIngested);
  }

  /** Encodes `event`; answers its bytes, to read now (`views` gives the ones to keep). */
  add(event: ParcelIngested): Buffer {
    if (this.#fallback !== null) {
      return this.#fallback.add(event);
    }
    if (this.#buffer === EMPTY) {
      // A batch of unchanged parcels adds none: no room is taken for it.
      this.#buffer = Buffer.allocUnsafe(Math.max(4096, this.#expected * 768));
    }
    const start = this.#pos;
    for (;;) {
      this.#record(event);
      if (this.#pos <= this.#buffer.length) {
        break;
      }
      const grown = Buffer.allocUnsafe(Math.max(2 * this.#buffer.length, 2 * this.#pos));
      this.#buffer.copy(grown, 0, 0, start);
      this.#buffer = grown;
      this.#pos = start;
    }
    this.#ends.push(this.#pos);
    return this.#buffer.subarray(start, this.#pos);
  }

  /** Every record's bytes, in the order added. */
  views(): Buffer[] {
    if (this.#fallback !== null) {
      return this.#fallback.views();
    }
    let start = 0;
    return this.#ends.map((end) => {
      const view = this.#buffer.subarray(start, end);
      start = end;
      return view;
    });
  }

  /** The fields in schema order. */
  #record(event: ParcelIngested): void {
    this.#string(event.ingest_id);
    this.#string(event.folio);
    this.#int(event.county_no);
    this.#string(event.parcel_id);
    this.#int(event.roll_year);
    this.#symbol(ROLL_STAGES, event.roll_stage);
    this.#optionalString(event.source_file);
    this.#string(event.content_hash);
    this.#optionalString(event.previous_content_hash);
    this.#optionalString(event.situs.address);
    this.#optionalString(event.situs.city);
    this.#optionalString(event.situs.zip);
    const landUse = event.land_use;
    this.#optionalString(landUse.dor_uc);
    if (this.#present(landUse.use_class)) {
      this.#symbol(USE_CLASSES, landUse.use_class);
    }
    this.#optionalString(landUse.appraiser_uc);
    const owner = event.owner;
    this.#string(owner.name);
    this.#optionalString(owner.mailing_state);
    const mailing = owner.mailing_address;
    this.#optionalString(mailing.line1);
    this.#optionalString(mailing.line2);
    this.#optionalString(mailing.city);
    this.#optionalString(mailing.state);
    this.#optionalString(mailing.zip);
    const valuation = event.valuation;
    this.#long(valuation.just_value);
    this.#optionalLong(valuation.assessed_value);
    this.#optionalLong(valuation.taxable_value);
    this.#optionalLong(valuation.land_value);
    this.#optionalLong(valuation.est_equity);
    if (this.#present(valuation.equity_ratio)) {
      this.#double(valuation.equity_ratio);
    }
    this.#optionalInt(event.year_built);
    this.#optionalInt(event.living_area_sqft);
    this.#optionalLong(event.land_sqft);
    this.#boolean(event.homestead);
    this.#optionalSale(event.last_sale);
    this.#optionalSale(event.last_qualified_sale);
    const signals = event.signals_fired;
    // An array is written as one block of its items, then an empty block; an empty one as that.
    if (signals.length > 0) {
      this.#long(signals.length);
      for (const signal of signals) {
        this.#string(signal);
      }
    }
    this.#byte(0);
    this.#string(event.observed_at);
  }

  #byte(value: number): void {
    this.#buffer[this.#pos++] = value;
  }

  /** The union branch of a nullable field: 0 for null, 1 for the value, which follows. */
  #present<T>(value: T | null): value is T {
    this.#byte(value === null ? 0 : 2);
    return value !== null;
  }

  #boolean(value: boolean): void {
    if (typeof value !== "boolean") {
      throw mismatch("a boolean", value);
    }
    this.#byte(value ? 1 : 0);
  }

  #int(value: number): void {
    if (value !== (value | 0)) {
      throw mismatch("an int", value);
    }
    this.#varint(value);
  }

  #long(value: number): void {
    if (typeof value !== "number" || value % 1 !== 0 || value < -MAX_LONG || value > MAX_LONG) {
      throw mismatch("a long", value);
    }
    this.#varint(value);
  }

  /** Zig-zag, then seven bits a byte, low first: integer arithmetic while it cannot overflow. */
  #varint(value: number): void {
    const buffer = this.#buffer;
    if (value >= MIN_LONG_AS_INT && value < MAX_LONG_AS_INT) {
      let zigzag = value >= 0 ? value << 1 : (~value << 1) | 1;
      while (zigzag > 0x7f) {
        buffer[this.#pos++] = (zigzag & 0x7f) | 0x80;
        zigzag >>>= 7;
      }
      buffer[this.#pos++] = zigzag;
      return;
    }
    let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
    while (zigzag >= 0x80) {
      buffer[this.#pos++] = (zigzag % 0x80) | 0x80;
      zigzag = Math.floor(zigzag / 0x80);
    }
    buffer[this.#pos++] = zigzag;
  }

  #double(value: number): void {
    if (typeof value !== "number") {
      throw mismatch("a double", value);
    }
    if (this.#pos + 8 <= this.#buffer.length) {
      this.#buffer.writeDoubleLE(value, this.#pos);
    }
    this.#pos += 8;
  }

  #symbol(symbols: ReadonlyMap<string, number>, value: string): void {
    const index = symbols.get(value);
    if (index === undefined) {
      throw mismatch("a symbol of the enum", value);
    }
    this.#varint(index);
  }

  /**
   * Length, then UTF-8 bytes. A string under 64 characters is written by one native call after a
   * byte kept for its length, which is one byte unless the string took 64 bytes or more; then it
   * is written again after its measured length. A string that might not fit moves the position
   * past the buffer's end, so the record is written again into a larger one.
   */
  #string(value: string): void {
    if (typeof value !== "string") {
      throw mismatch("a string", value);
    }
    const length = value.length;
    if (length < 64) {
      const start = this.#pos;
      if (start + 1 + 3 * length > this.#buffer.length) {
        this.#pos += 1 + 3 * length;
        return;
      }
      const bytes = this.#buffer.write(value, start + 1);
      if (bytes < 64) {
        this.#buffer[start] = bytes << 1;
        this.#pos = start + 1 + bytes;
        return;
      }
    }
    this.#utf8(value);
  }

  #utf8(value: string): void {
    const bytes = Buffer.byteLength(value);
    this.#varint(bytes);
    if (this.#pos + bytes <= this.#buffer.length) {
      this.#buffer.write(value, this.#pos, bytes);
    }
    this.#pos += bytes;
  }

  #optionalString(value: string | null): void {
    if (this.#present(value)) {
      this.#string(value);
    }
  }

  #optionalInt(value: number | null): void {
    if (this.#present(value)) {
      this.#int(value);
    }
  }

  #optionalLong(value: number | null): void {
    if (this.#present(value)) {
      this.#long(value);
    }
  }

  #optionalSale(sale: Sale | null): void {
    if (this.#present(sale)) {
      this.#long(sale.price);
      this.#int(sale.year);
      this.#int(sale.month);
      this.#optionalString(sale.qualification_code);
    }
  }
}

/** A producer bug, not bad input: the same words as the bus's encoder. */
function mismatch(expected: string, value: unknown): Error {
  return new Error(
    `value does not match ${contracts.parcelIngested.schemaName}: expected ${expected}, got ${JSON.stringify(value)}`,
  );
}
