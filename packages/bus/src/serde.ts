import {
  decodeRecord,
  encodeRecord,
  encodeRecordInto,
  SCHEMA_HEADER,
  schemaHeaderValue,
  type TopicContract,
} from "@th/contracts";

/** A record that cannot be read as its topic's contract; it is parked, never retried. */
export class PoisonRecordError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "PoisonRecordError";
  }
}

export function encodeValue<T>(contract: TopicContract<T>, value: T): Buffer {
  try {
    return encodeRecord(contract, value);
  } catch (error) {
    throw mismatch(contract, error);
  }
}

/**
 * Records whose values were encoded ahead of their publish (`ValueEncoder`), e.g. because they are
 * also stored as encoded: each in the contract's current schema, under the key the contract
 * gives it.
 */
export interface EncodedRecords<T> {
  contract: TopicContract<T>;
  keys: readonly string[];
  values: readonly Buffer[];
}

/**
 * Encodes values one at a time into one growing allocation: a bulk producer that keeps the
 * encoded records (to store them as well) pays no buffer per record, and can encode each value
 * as soon as it exists instead of holding a batch of values first.
 */
export class ValueEncoder<T> {
  readonly #contract: TopicContract<T>;
  #buffer: Buffer;
  readonly #ends: number[] = [];

  constructor(contract: TopicContract<T>, expectedValues = 64) {
    this.#contract = contract;
    this.#buffer = Buffer.allocUnsafe(Math.max(4096, expectedValues * 1024));
  }

  /** Encodes `value`; answers its bytes, to read now (`views` gives the ones to keep). */
  add(value: T): Buffer {
    const start = this.#ends.at(-1) ?? 0;
    const written = encodeAt(this.#contract, value, this.#buffer, start);
    this.#buffer = written.buffer;
    this.#ends.push(written.end);
    return this.#buffer.subarray(start, written.end);
  }

  /** Every value's bytes, in the order added. */
  views(): Buffer[] {
    let start = 0;
    return this.#ends.map((end) => {
      const view = this.#buffer.subarray(start, end);
      start = end;
      return view;
    });
  }
}

let scratch: Buffer = Buffer.allocUnsafe(64 * 1024);

/**
 * Like `encodeValue`, into a buffer shared by every call: the answer is valid only until the
 * next call, for a caller that copies it at once (the record batch writer), so a bulk publish
 * allocates no buffer per record.
 */
export function encodeValueTransient<T>(contract: TopicContract<T>, value: T): Buffer {
  const written = encodeAt(contract, value, scratch, 0);
  scratch = written.buffer;
  return scratch.subarray(0, written.end);
}

/**
 * Encodes `value` into `buffer` from `pos`; when it does not fit, into a larger copy of the
 * buffer's first `pos` bytes. Answers the buffer written and where the value ends.
 */
function encodeAt<T>(
  contract: TopicContract<T>,
  value: T,
  buffer: Buffer,
  pos: number,
): { buffer: Buffer; end: number } {
  let target = buffer;
  for (;;) {
    let end: number;
    try {
      end = encodeRecordInto(contract, value, target, pos);
    } catch (error) {
      throw mismatch(contract, error);
    }
    if (end >= 0) {
      return { buffer: target, end };
    }
    // A negative answer is the buffer's length less the end the value needs.
    const grown = Buffer.allocUnsafe(Math.max(2 * target.length, target.length - end));
    target.copy(grown, 0, 0, pos);
    target = grown;
  }
}

/** A producer bug, not bad input from outside: says which contract the value broke. */
function mismatch<T>(contract: TopicContract<T>, error: unknown): Error {
  return new Error(`value does not match ${contract.schemaName}: ${(error as Error).message}`);
}

export function schemaHeaders<T>(contract: TopicContract<T>): Record<string, string> {
  return { [SCHEMA_HEADER]: schemaHeaderValue(contract) };
}

/**
 * Decodes with the writer schema the record's header names, resolved into the reader's current
 * schema; anything that cannot be read that way is poison for this consumer.
 */
export function decodeValue<T>(
  contract: TopicContract<T>,
  value: Buffer | null,
  headers: Record<string, string>,
): T {
  if (value === null) {
    throw new PoisonRecordError("record has no value");
  }
  try {
    return decodeRecord(contract, value, headers[SCHEMA_HEADER]);
  } catch (error) {
    throw new PoisonRecordError(
      `cannot decode as ${contract.schemaName}: ${(error as Error).message}`,
    );
  }
}

export function headersToStrings(
  headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined,
): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) {
      continue;
    }
    const last = Array.isArray(value) ? value.at(-1) : value;
    if (last !== undefined) {
      result[name] = last.toString();
    }
  }
  return result;
}
