import { KEY_LIKE } from "@th/api-keys";

const JSON_ESCAPE = /\\(?:u([0-9a-fA-F]{4})|(.))/g;
const PERCENT_ESCAPE = /%([0-9a-fA-F]{2})/g;

/**
 * Whether a request body's raw text holds a key-shaped value, however it is written: as is, with
 * JSON escapes (`th\u005flive_…`), or percent-encoded as a form sends it. The text is searched
 * before any parser runs, so a member named twice cannot hide a key behind the one kept, and a
 * body no route reads (a GET's, a form's) is searched as well.
 */
export function bodyHoldsKey(text: string): boolean {
  if (KEY_LIKE.test(text)) {
    return true;
  }
  if (
    text.includes("\\") &&
    KEY_LIKE.test(
      text.replace(JSON_ESCAPE, (_match, hex: string | undefined, char: string) =>
        hex ? String.fromCharCode(Number.parseInt(hex, 16)) : char,
      ),
    )
  ) {
    return true;
  }
  return (
    text.includes("%") &&
    KEY_LIKE.test(
      text.replace(PERCENT_ESCAPE, (_match, hex: string) =>
        String.fromCharCode(Number.parseInt(hex, 16)),
      ),
    )
  );
}
