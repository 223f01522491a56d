/**
 * The path of the first member name that an object in a JSON text repeats, or null.
 *
 * JSON.parse keeps the last of a repeated member, so `{"tier":"starter","tier":"custom"}` would
 * pass as Custom while a reader of the text sees Starter; such a body is refused instead. This
 * scan is only trusted for text that JSON.parse accepts (it runs first and reports no syntax
 * error of its own: malformed text returns null and the parser refuses it). One pass, no
 * allocation for objects of one member or texts without objects.
 */
export function duplicateMember(text: string): string[] | null {
  if (text.indexOf(":") === text.lastIndexOf(":")) {
    // Fewer than two members in the whole text: nothing can repeat.
    return null;
  }
  const stack: Frame[] = [];
  let expectName = false;
  let i = 0;
  while (i < text.length) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      const end = endOfString(text, i);
      if (end < 0) {
        return null;
      }
      const top = stack[stack.length - 1];
      if (expectName && top?.names) {
        const name = nameOf(text, i, end);
        if (name === null) {
          return null;
        }
        if (top.names.has(name)) {
          return [...stack.slice(0, -1).map(segmentOf), name];
        }
        top.names.add(name);
        top.at = name;
        expectName = false;
      }
      i = end;
      continue;
    }
    if (char === OPEN_BRACE) {
      stack.push({ names: new Set(), at: "" });
      expectName = true;
    } else if (char === OPEN_BRACKET) {
      stack.push({ names: null, at: 0 });
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      stack.pop();
      expectName = false;
    } else if (char === COMMA) {
      const top = stack[stack.length - 1];
      if (top?.names) {
        expectName = true;
      } else if (top) {
        top.at = (top.at as number) + 1;
      }
    }
    i++;
  }
  return null;
}

interface Frame {
  /** Member names seen so far; null for an array. */
  names: Set<string> | null;
  /** The current member name, or the current array index. */
  at: string | number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

function segmentOf(frame: Frame): string {
  return String(frame.at);
}

/** The index just past the string that opens at `start`, or -1 when it never closes. */
function endOfString(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === BACKSLASH) {
      i++;
    } else if (char === QUOTE) {
      return i + 1;
    }
  }
  return -1;
}

/** A member name as JSON.parse reads it: `"a"` and `"\u0061"` are the same name. */
function nameOf(text: string, start: number, end: number): string | null {
  const raw = text.slice(start + 1, end - 1);
  if (!raw.includes("\\")) {
    return raw;
  }
  try {
    return JSON.parse(text.slice(start, end)) as string;
  } catch {
    return null;
  }
}
