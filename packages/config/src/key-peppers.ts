import { z } from "zod";

// API-key hashes are HMACs under a server pepper. The pepper carries a version so it can rotate
// without voiding every key (decision 0345): KEY_PEPPER holds one 32-byte key (version 1, the
// setting as it always was) or `version:key` pairs, the current pepper first
// (`2:<new>,1:<old>`). New keys are hashed under the first; a key hashed under another listed
// version still authenticates and is re-hashed under the first; a version left out is void.

export interface KeyPepper {
  version: number;
  key: Buffer;
}

export interface KeyPeppers {
  /** The pepper new hashes are made with: the first listed. */
  current: KeyPepper;
  /** Every pepper a stored hash may have been made with, the current one first. */
  all: readonly KeyPepper[];
}

/** 32 bytes written as 64 hex characters or base64, as `vars.secretKey` reads them. */
function pepperBytes(value: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(value)) {
    return Buffer.from(value, "hex");
  }
  const decoded = Buffer.from(value, "base64");
  return decoded.length === 32 ? decoded : undefined;
}

/** The peppers a KEY_PEPPER value names, or why it names none (the reason never quotes it). */
export function parseKeyPeppers(value: string): KeyPeppers | { problem: string } {
  const text = value.trim();
  if (!text.includes(":")) {
    const key = pepperBytes(text);
    return key
      ? { current: { version: 1, key }, all: [{ version: 1, key }] }
      : { problem: "must be 32 bytes, written as 64 hex characters or base64" };
  }
  const all: KeyPepper[] = [];
  for (const item of text.split(",")) {
    const match = /^\s*(\d{1,4}):(\S+)\s*$/.exec(item);
    const version = Number(match?.[1]);
    const key = match ? pepperBytes(match[2] as string) : undefined;
    if (!match || !key || version < 1 || version > 32_767) {
      return {
        problem:
          "must be version:key pairs, the current pepper first (2:<key>,1:<key>), each version 1 to 32767 and each key 32 bytes in hex or base64",
      };
    }
    if (all.some((pepper) => pepper.version === version)) {
      return { problem: `names pepper version ${version} twice` };
    }
    all.push({ version, key });
  }
  return { current: all[0] as KeyPepper, all };
}

/** The KEY_PEPPER setting: one pepper (version 1) or versioned peppers, the current first. */
export function keyPeppersSetting() {
  return z.string().superRefine((value, ctx) => {
    const parsed = parseKeyPeppers(value);
    if ("problem" in parsed) {
      ctx.addIssue({ code: "custom", message: parsed.problem });
    }
  });
}

/** The peppers of a config whose KEY_PEPPER the setting already validated. */
export function keyPeppersOf(config: { KEY_PEPPER: string }): KeyPeppers {
  const parsed = parseKeyPeppers(config.KEY_PEPPER);
  if ("problem" in parsed) {
    throw new Error(`KEY_PEPPER ${parsed.problem}`);
  }
  return parsed;
}
