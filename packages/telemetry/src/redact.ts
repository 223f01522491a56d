/**
 * Secrets that must never reach a log line: API keys, webhook signing secrets, bearer tokens and
 * passwords inside URLs. Only a recognisable prefix and the last four characters survive, which is
 * what support needs to tell two keys apart.
 */
const SECRET_PATTERNS: readonly RegExp[] = [
  // No word boundary before the prefix: `api_key_th_live_...` must not slip through, and a key's
  // prefix in any case still carries the key's secret body.
  /(th_(?:live|test)_)[A-Za-z0-9]+/gi,
  /(whsec_)[A-Za-z0-9+/=_-]+/gi,
  // A redacted token (`Bearer …1234`) is not one again.
  /\b(Bearer\s+)(?!…)[^\s,"&]+/gi,
];
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/\s]+:)[^@\s]+@/gi;
const SECRET_FIELD = /^(authorization|cookie|set-cookie|password|secret|api_?key|token|pepper)$/i;
/** Percent-encoding nested deeper than this (`%255F` is two levels) is not looked through. */
const MAX_DECODE_LAYERS = 4;

function redacted(match: string, prefix: string): string {
  const tail = match.slice(prefix.length);
  return `${prefix}…${tail.length > 8 ? tail.slice(-4) : ""}`;
}

/** A text with, for each of its characters, where that character came from in the original. */
interface DecodedView {
  text: string;
  /** `origin[i]` is the original offset of character i; `origin[text.length]` is the end. */
  origin: number[];
}

const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;

/**
 * One level of form decoding (`%XX` to its byte, `+` to a space), tracking where each decoded
 * character came from. Bytes stand for themselves: keys are ASCII, so UTF-8 need not be joined.
 */
function decodeLayer(view: DecodedView): DecodedView {
  let text = "";
  const origin: number[] = [];
  const source = view.text;
  let at = 0;
  while (at < source.length) {
    const char = source[at] as string;
    origin.push(view.origin[at] as number);
    if (char === "%" && HEX_PAIR.test(source.slice(at + 1, at + 3))) {
      text += String.fromCharCode(Number.parseInt(source.slice(at + 1, at + 3), 16));
      at += 3;
    } else {
      text += char === "+" ? " " : char;
      at += 1;
    }
  }
  origin.push(view.origin[source.length] as number);
  return { text, origin };
}

/** The text as it stands, then each level of its decoding, as deep as MAX_DECODE_LAYERS. */
function decodedViews(text: string): DecodedView[] {
  const views: DecodedView[] = [
    { text, origin: Array.from({ length: text.length + 1 }, (_, index) => index) },
  ];
  for (let layer = 0; layer < MAX_DECODE_LAYERS; layer++) {
    const deeper = decodeLayer(views.at(-1) as DecodedView);
    if (deeper.text === (views.at(-1) as DecodedView).text) {
      break;
    }
    views.push(deeper);
  }
  return views;
}

interface SecretSpan {
  from: number;
  to: number;
  replacement: string;
  /** Length of the decoded secret: of overlapping finds, the longest names the span. */
  length: number;
}

/** Every secret any view shows, as a span of the original text. */
function secretSpans(views: readonly DecodedView[]): SecretSpan[] {
  const spans: SecretSpan[] = [];
  for (const view of views) {
    for (const pattern of SECRET_PATTERNS) {
      for (const found of view.text.matchAll(pattern)) {
        const [match, prefix = ""] = found;
        const index = found.index ?? 0;
        spans.push({
          from: view.origin[index] as number,
          to: view.origin[index + match.length] as number,
          replacement: redacted(match, prefix),
          length: match.length,
        });
      }
    }
  }
  return spans;
}

/** Overlapping spans joined into one, which takes the redacted form of its longest secret. */
function mergeSpans(spans: SecretSpan[]): SecretSpan[] {
  const merged: SecretSpan[] = [];
  for (const span of spans.sort((a, b) => a.from - b.from)) {
    const last = merged.at(-1);
    if (last && span.from < last.to) {
      const longer = span.length > last.length ? span : last;
      merged[merged.length - 1] = {
        ...longer,
        from: last.from,
        to: Math.max(last.to, span.to),
      };
    } else {
      merged.push(span);
    }
  }
  return merged;
}

/**
 * The text with every secret redacted, whether plain or under percent-encoding (`th%5Flive%5F…`,
 * `th_live%5F…`, `%255F`, `+` for a space): a URL logged as received must not leak a key its
 * client escaped. A secret spread over escaped and plain characters is redacted as one.
 */
function scrubEncoded(text: string): string {
  const spans = mergeSpans(secretSpans(decodedViews(text)));
  let scrubbed = "";
  let at = 0;
  for (const span of spans) {
    scrubbed += text.slice(at, span.from) + span.replacement;
    at = span.to;
  }
  return scrubbed + text.slice(at);
}

const ESCAPE = /%([0-9A-Fa-f]{2})|\+/g;
const SECRET_START = /th_(?:live|test)_|whsec_|bearer\s/i;

const decodeEscape = (_escaped: string, hex: string | undefined) =>
  hex === undefined ? " " : String.fromCharCode(Number.parseInt(hex, 16));

/** Whether some level of the text's decoding starts a secret; cheap, as it tracks no offsets. */
function decodingStartsSecret(text: string): boolean {
  let current = text;
  for (let layer = 0; layer < MAX_DECODE_LAYERS; layer++) {
    const deeper = current.replace(ESCAPE, decodeEscape);
    if (deeper === current) {
      return false;
    }
    if (SECRET_START.test(deeper)) {
      return true;
    }
    current = deeper;
  }
  return false;
}

export function scrubText(text: string): string {
  const scrubbed = text.replace(URL_PASSWORD, "$1***@");
  // Most lines carry no escapes, and most escaped ones no secret: only those pay for the offsets.
  const escaped = scrubbed.includes("%") || scrubbed.includes("+");
  if (escaped && decodingStartsSecret(scrubbed)) {
    return scrubEncoded(scrubbed);
  }
  let plain = scrubbed;
  for (const pattern of SECRET_PATTERNS) {
    plain = plain.replace(pattern, redacted);
  }
  return plain;
}

/** Deep copy with secret-named fields masked and secret-shaped strings scrubbed. */
export function scrubValue(value: unknown, depth = 0): unknown {
  if (typeof value === "string") {
    return scrubText(value);
  }
  if (depth > 6 || value === null || typeof value !== "object") {
    return value;
  }
  if (value instanceof Error) {
    return {
      type: value.name,
      message: scrubText(value.message),
      stack: scrubText(value.stack ?? ""),
    };
  }
  if (Array.isArray(value)) {
    return value.map((item) => scrubValue(item, depth + 1));
  }
  if (Buffer.isBuffer(value)) {
    return `<${value.length} bytes>`;
  }
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    copy[key] = SECRET_FIELD.test(key) ? "[redacted]" : scrubValue(field, depth + 1);
  }
  return copy;
}
