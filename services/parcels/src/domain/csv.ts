/** A record's fields by position: an array, or a line read on demand (`LineFields`). */
export interface Fields {
  readonly length: number;
  at(index: number): string | undefined;
}

/** The fields as an array (a header's, or a test's to compare). */
export function fieldValues(fields: Fields): string[] {
  return Array.isArray(fields)
    ? fields
    : Array.from({ length: fields.length }, (_, index) => fields.at(index) ?? "");
}

/**
 * The fields of a line without quotes, each sliced out only when read: a roll row has 165 and a
 * lead is built from about 40. Splitting every line into all of its fields was about half of the
 * reader's time, and most of its garbage.
 */
export class LineFields implements Fields {
  readonly #line: string;
  /** Where each field ends: at its comma, the last one at the end of the line. */
  readonly #ends: readonly number[];

  /** `ends`: where each field of `line` ends (`CsvReader` finds them as it looks for the line's end). */
  constructor(line: string, ends: readonly number[]) {
    this.#line = line;
    this.#ends = ends;
  }

  get length(): number {
    return this.#ends.length;
  }

  /** The field at `index`, or undefined past the last; unlike an array's, no negative index. */
  at(index: number): string | undefined {
    const ends = this.#ends;
    if (index < 0 || index >= ends.length) {
      return undefined;
    }
    const start = index === 0 ? 0 : (ends[index - 1] as number) + 1;
    return this.#line.slice(start, ends[index]);
  }
}

/**
 * The fields of a line without quotes, found only as far as they are read: a reader that reads
 * the first few fields of most lines (a re-ingest's key) does not split the rest.
 */
export class LineFieldsOnDemand implements Fields {
  readonly #line: string;
  /** Where each field found so far ends. */
  readonly #ends: number[] = [];
  #whole = false;

  constructor(line: string) {
    this.#line = line;
  }

  get length(): number {
    this.#splitTo(Number.POSITIVE_INFINITY);
    return this.#ends.length;
  }

  /** The field at `index`, or undefined past the last; unlike an array's, no negative index. */
  at(index: number): string | undefined {
    const ends = this.#ends;
    if (index < 0) {
      return undefined;
    }
    if (index >= ends.length) {
      this.#splitTo(index);
      if (index >= ends.length) {
        return undefined;
      }
    }
    const start = index === 0 ? 0 : (ends[index - 1] as number) + 1;
    return this.#line.slice(start, ends[index]);
  }

  #splitTo(index: number): void {
    const ends = this.#ends;
    while (!this.#whole && ends.length <= index) {
      const from = ends.length === 0 ? 0 : (ends[ends.length - 1] as number) + 1;
      const comma = this.#line.indexOf(",", from);
      if (comma === -1) {
        ends.push(this.#line.length);
        this.#whole = true;
      } else {
        ends.push(comma);
      }
    }
  }
}

/** One CSV record: its fields and the file line it starts on (header = line 1). */
export interface CsvRecord {
  fields: Fields;
  line: number;
  /**
   * The record as it stands in the file, its line break left off (and CR alone read as LF): the
   * same text reads as the same fields. Absent on a record the reader refused.
   */
  text?: string;
  /** Set when the record cannot be a roll row (an unclosed quote, a control character, …). */
  error?: string;
}

/** Where the reader hands each record as soon as it is read (an array will do). */
export interface RecordSink {
  push(record: CsvRecord): void;
}

/**
 * A record longer than this is not a roll row (a DOR row is under 2 KB): rejected rather than
 * stored, where one huge field would also exceed the largest record the topic takes.
 */
export const MAX_RECORD_CHARS = 65_536;

// C0 controls other than tab and line breaks, DEL, and U+FFFD (what bytes that are not UTF-8
// decode to): no roll value holds them, and Postgres text refuses NUL.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const UNREADABLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/;

/** Why a record's text cannot be a roll row; null when it can. */
export function unreadable(text: string): string | null {
  if (text.length > MAX_RECORD_CHARS) {
    return `record longer than ${MAX_RECORD_CHARS} characters`;
  }
  const found = UNREADABLE.exec(text);
  if (found === null) {
    return null;
  }
  return found[0] === "\ufffd"
    ? "holds bytes that are not UTF-8"
    : `holds a control character (U+${found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")})`;
}

const QUOTE = 34;
const COMMA = 44;
const NEWLINE = 10;
const CARRIAGE_RETURN = 13;
const TAB = 9;
const DELETE = 0x7f;
const REPLACEMENT = 0xfffd;

/**
 * Where the commas of the line being read are, grown as lines need. A plain array of small
 * integers: each line keeps a copy, and a typed array's copy took a buffer of its own outside the
 * heap (several times the cost of the copy on the heap).
 */
let commaScratch: number[] = new Array<number>(256).fill(0);

function grown(scratch: readonly number[]): number[] {
  const larger = new Array<number>(scratch.length * 2).fill(0);
  for (let index = 0; index < scratch.length; index++) {
    larger[index] = scratch[index] as number;
  }
  return larger;
}

/** The fields of a line without quotes, split as the reader splits it. */
export function lineFieldsOf(line: string): LineFields {
  return new LineFields(line, endsOf(line));
}

/** Where each field of a line without quotes ends: at its comma, the last at the line's end. */
function endsOf(line: string): number[] {
  let count = 0;
  for (let comma = line.indexOf(","); comma !== -1; comma = line.indexOf(",", comma + 1)) {
    if (count === commaScratch.length - 1) {
      commaScratch = grown(commaScratch);
    }
    commaScratch[count++] = comma;
  }
  commaScratch[count++] = line.length;
  return commaScratch.slice(0, count);
}

/**
 * Streaming RFC 4180 reader: push text chunks, collect whole records. Quoted fields may hold
 * commas, doubled quotes and newlines; CRLF and LF both end a record, and so does CR alone in a
 * file whose first line ends so (a spreadsheet saved as "CSV (Macintosh)"). Lines without a quote
 * take a fast path (`LineFields`), which is what keeps a 10-million-row roll cheap to read. A stray
 * quote inside an unquoted field is kept as text rather than failing the row, as spreadsheet
 * exports produce them.
 */
export class CsvReader {
  /**
   * Hands plain lines on with their fields split only as they are read (`LineFieldsOnDemand`),
   * for a reader that reads a few fields of most records and keeps few of them. The line is then
   * found by searching for its end and a quote, not by a pass over each character, and its text
   * is not looked through for anything unreadable: the reader checks it (`unreadable`) for each
   * record it keeps. Such a record is not stored unless it is.
   */
  splitOnDemand = false;
  #pending = "";
  #line = 1;
  #started = false;
  /** Discarding a record too long to be a row, up to its next line break. */
  #skipping = false;
  /** How the file ends its lines, known from its first line break. */
  #lineBreaks: "lf" | "cr" | undefined;

  /** Hands the complete records found in `chunk` to `out`; keeps an unfinished tail. */
  push(chunk: string, out: RecordSink): void {
    let text =
      this.#pending.length > 0 ? this.#pending + this.#normalized(chunk) : this.#normalized(chunk);
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) {
        text = text.slice(1);
      }
    }
    if (this.#lineBreaks === undefined) {
      this.#lineBreaks = lineBreaksOf(text);
      if (this.#lineBreaks === "cr") {
        text = text.replaceAll("\r", "\n");
      }
    }
    if (this.#skipping) {
      const newline = text.indexOf("\n");
      if (newline === -1) {
        this.#pending = "";
        return;
      }
      text = text.slice(newline + 1);
      this.#line += 1;
      this.#skipping = false;
    }
    for (;;) {
      const tail = text.slice(this.#consume(text, out, false));
      if (tail.length <= MAX_RECORD_CHARS) {
        this.#pending = tail;
        return;
      }
      // A tail this long is no row: a line break missing (lines ending in CR alone after a first
      // line ending in LF) or a quote never closed. Kept, it would hold the rest of the file in
      // memory. Its first line is reported, and reading starts again on the line after it.
      out.push({
        fields: [],
        line: this.#line,
        error: `record longer than ${MAX_RECORD_CHARS} characters: a line break or a closing quote is missing`,
      });
      const newline = tail.indexOf("\n");
      if (newline === -1) {
        this.#pending = "";
        this.#skipping = true;
        return;
      }
      this.#line += 1;
      text = tail.slice(newline + 1);
    }
  }

  /** A chunk with the file's line breaks as LF, once they are known to be CR alone. */
  #normalized(chunk: string): string {
    return this.#lineBreaks === "cr" ? chunk.replaceAll("\r", "\n") : chunk;
  }

  /** Flushes the last record (a file need not end with a newline). */
  end(out: RecordSink): void {
    const text = this.#pending;
    this.#pending = "";
    if (text.length > 0 && !this.#skipping) {
      this.#consume(`${text}\n`, out, true);
    }
  }

  /** Reads records from `text`; returns the index where the unfinished tail starts. */
  #consume(text: string, out: RecordSink, final: boolean): number {
    let position = 0;
    const length = text.length;
    // Set by the reader of the header, perhaps in the middle of this text.
    let marks: Marks | null = null;
    while (position < length) {
      if (this.splitOnDemand) {
        marks ??= new Marks(text);
      }
      const next =
        marks === null
          ? this.#plainLine(text, position, out)
          : this.#plainLineOnDemand(text, position, out, marks);
      if (next >= 0) {
        position = next;
        continue;
      }
      const newline = text.indexOf("\n", position);
      if (newline === -1) {
        return position;
      }
      const quote = text.indexOf('"', position);
      if (quote === -1 || quote > newline) {
        let end = newline;
        if (end > position && text.charCodeAt(end - 1) === CARRIAGE_RETURN) {
          end -= 1;
        }
        if (end > position) {
          const line = text.slice(position, end);
          const problem = unreadable(line);
          out.push(
            problem === null
              ? { fields: new LineFields(line, endsOf(line)), line: this.#line, text: line }
              : { fields: [], line: this.#line, error: problem },
          );
        }
        this.#line += 1;
        position = newline + 1;
        continue;
      }
      const after = this.#quotedRecord(text, position, out, final);
      if (after === -1) {
        return position;
      }
      position = after;
    }
    return position;
  }

  /**
   * The common line, read in one pass over the chunk: no quote, nothing unreadable, not too long.
   * Its commas are noted on the way to its end, so its fields need no second look. Returns the
   * index after its line break, or -1 for any other line (or one not ended yet), which the general
   * path reads.
   */
  #plainLine(text: string, start: number, out: RecordSink): number {
    const length = Math.min(text.length, start + MAX_RECORD_CHARS + 2);
    let count = 0;
    for (let index = start; index < length; index++) {
      const code = text.charCodeAt(index);
      if (code === COMMA) {
        if (count === commaScratch.length - 1) {
          commaScratch = grown(commaScratch);
        }
        commaScratch[count++] = index - start;
      } else if (code < 32 || code === QUOTE || code === DELETE || code === REPLACEMENT) {
        if (code !== NEWLINE) {
          if (code === TAB || code === CARRIAGE_RETURN) {
            continue;
          }
          return -1;
        }
        let end = index;
        if (end > start && text.charCodeAt(end - 1) === CARRIAGE_RETURN) {
          end -= 1;
        }
        if (end - start > MAX_RECORD_CHARS) {
          return -1;
        }
        if (end > start) {
          commaScratch[count++] = end - start;
          const line = text.slice(start, end);
          out.push({
            fields: new LineFields(line, commaScratch.slice(0, count)),
            line: this.#line,
            text: line,
          });
        }
        this.#line += 1;
        return index + 1;
      }
    }
    return -1;
  }

  /**
   * The common line, its fields split on demand: no quote, not too long, its text unchecked.
   * Returns the index after its line break, or -1 for any other line (or one not ended yet),
   * which the general path reads.
   */
  #plainLineOnDemand(text: string, start: number, out: RecordSink, marks: Marks): number {
    const newline = text.indexOf("\n", start);
    if (newline === -1) {
      return -1;
    }
    let end = newline;
    if (end > start && text.charCodeAt(end - 1) === CARRIAGE_RETURN) {
      end -= 1;
    }
    if (end - start > MAX_RECORD_CHARS || marks.quote(start) < newline) {
      return -1;
    }
    if (end > start) {
      const line = text.slice(start, end);
      out.push({ fields: new LineFieldsOnDemand(line), line: this.#line, text: line });
    }
    this.#line += 1;
    return newline + 1;
  }

  /**
   * Reads one record that contains a quote, character by character. Returns the index after its
   * line end, or -1 when the record continues past the end of `text` (more input needed).
   */
  #quotedRecord(text: string, start: number, out: RecordSink, final: boolean): number {
    const fields: string[] = [];
    let field = "";
    let index = start;
    let newlines = 0;
    const length = text.length;
    while (index < length) {
      let code = text.charCodeAt(index);
      if (code === QUOTE && field.length === 0 && atFieldStart(text, index, start)) {
        // A quoted field: read to the closing quote, unescaping doubled quotes.
        index += 1;
        for (;;) {
          const close = text.indexOf('"', index);
          if (close === -1) {
            if (!final) {
              return -1;
            }
            field += text.slice(index);
            newlines += countNewlines(text, index, length);
            fields.push(trimLineEnd(field));
            out.push({
              fields,
              line: this.#line,
              error: `a quote opened on line ${this.#line} is never closed: the rest of the file is not read`,
            });
            this.#line += newlines;
            return length;
          }
          field += text.slice(index, close);
          newlines += countNewlines(text, index, close);
          if (text.charCodeAt(close + 1) === QUOTE) {
            field += '"';
            index = close + 2;
            continue;
          }
          index = close + 1;
          break;
        }
        continue;
      }
      if (code === COMMA) {
        fields.push(field);
        field = "";
        index += 1;
        continue;
      }
      if (code === CARRIAGE_RETURN && text.charCodeAt(index + 1) === NEWLINE) {
        index += 1;
        code = NEWLINE;
      }
      if (code === NEWLINE) {
        fields.push(field);
        // The line break left off, a CR before it too (the fields never hold that one).
        const record = text.slice(
          start,
          text.charCodeAt(index - 1) === CARRIAGE_RETURN ? index - 1 : index,
        );
        const problem = unreadable(record);
        out.push(
          problem === null
            ? { fields, line: this.#line, text: record }
            : { fields: [], line: this.#line, error: problem },
        );
        this.#line += newlines + 1;
        return index + 1;
      }
      // Up to the next character that could end the field, at once.
      let runEnd = index + 1;
      while (runEnd < length) {
        const next = text.charCodeAt(runEnd);
        if (next === COMMA || next === QUOTE || next === NEWLINE || next === CARRIAGE_RETURN) {
          break;
        }
        runEnd += 1;
      }
      field += text.slice(index, runEnd);
      index = runEnd;
    }
    return final ? length : -1;
  }
}

/** Where a text's next quote is, searched for once for the lines before it. */
class Marks {
  readonly #text: string;
  #quote = -1;

  constructor(text: string) {
    this.#text = text;
  }

  /** The first quote at or after `from`; infinity when there is none. */
  quote(from: number): number {
    if (this.#quote < from) {
      const at = this.#text.indexOf('"', from);
      this.#quote = at === -1 ? Number.POSITIVE_INFINITY : at;
    }
    return this.#quote;
  }
}

/**
 * "cr" when the first line break in `text` is a CR not followed by LF, "lf" for LF or CRLF, and
 * undefined while no line break (or only a CR at the very end) has been seen.
 */
function lineBreaksOf(text: string): "lf" | "cr" | undefined {
  const newline = text.indexOf("\n");
  const carriageReturn = text.indexOf("\r");
  if (carriageReturn === -1 || (newline !== -1 && newline < carriageReturn)) {
    return newline === -1 ? undefined : "lf";
  }
  if (carriageReturn === text.length - 1) {
    return undefined;
  }
  return text.charCodeAt(carriageReturn + 1) === NEWLINE ? "lf" : "cr";
}

function atFieldStart(text: string, index: number, recordStart: number): boolean {
  return index === recordStart || text.charCodeAt(index - 1) === COMMA;
}

function countNewlines(text: string, from: number, to: number): number {
  let count = 0;
  for (let at = text.indexOf("\n", from); at !== -1 && at < to; at = text.indexOf("\n", at + 1)) {
    count += 1;
  }
  return count;
}

function trimLineEnd(value: string): string {
  return value.replace(/\r?\n$/, "");
}
