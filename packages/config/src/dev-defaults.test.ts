import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { DEV_SECRETS, defineConfig, vars } from "./index.ts";

const pepper = DEV_SECRETS.KEY_PEPPER;
const devListDefault = `gateway:${"a1".repeat(20)},matcher:${"b2".repeat(20)}`;
const real = () => randomBytes(32).toString("hex");

const service = defineConfig(
  {
    NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
    KEY_PEPPER: vars.secretKey().default(pepper),
    /** A list of secrets, as a rotation setting holds them. */
    SECRET_KEYS: z.string().default(pepper),
    CALLER_KEYS: z.string().default(devListDefault),
  },
  { devDefaults: { ...DEV_SECRETS, SECRET_KEYS: pepper, CALLER_KEYS: devListDefault } },
);

/** A production environment with every secret set to a real value, then these overrides. */
function production(overrides: Record<string, string>) {
  return {
    NODE_ENV: "production",
    KEY_PEPPER: real(),
    SECRET_KEYS: real(),
    CALLER_KEYS: `gateway:${real()}`,
    ...overrides,
  };
}

describe("production refuses a development default anywhere in a setting", () => {
  it("accepts real values, and development defaults outside production", () => {
    expect(() => service.load(production({}))).not.toThrow();
    expect(() => service.load({ NODE_ENV: "development" })).not.toThrow();
  });

  it.each([
    ["exactly", pepper],
    ["after a real key in a list", `${real()},${pepper}`],
    ["before a real key, semicolon-separated", `${pepper};${real()}`],
    ["padded with whitespace", `  ${pepper}\t`],
    ["as the secret of a version:secret list", `2:${real()},1:${pepper}`],
    ["as the secret of a name=secret list", `current=${real()} old=${pepper}`],
    ["upper-cased hex (the same bytes)", pepper.toUpperCase()],
    ["written as base64 (the same bytes)", Buffer.from(pepper, "hex").toString("base64")],
    ["written as base64url", `${real()},${Buffer.from(pepper, "hex").toString("base64url")}`],
  ])("refuses the dev pepper %s in a list setting", (_, value) => {
    expect(() => service.load(production({ SECRET_KEYS: value }))).toThrow(
      /SECRET_KEYS: must be set in production/,
    );
  });

  it("refuses the dev pepper carried by another setting than its own, naming whose it is", () => {
    expect(() => service.load(production({ CALLER_KEYS: `gateway:${pepper}` }))).toThrow(
      /CALLER_KEYS: must be set in production: it holds the development default of KEY_PEPPER/,
    );
  });

  it("refuses one dev key of a name:key list default kept among real ones, but not its names", () => {
    const devMatcherKey = `matcher:${"b2".repeat(20)}`;
    expect(() =>
      service.load(production({ CALLER_KEYS: `gateway:${real()},${devMatcherKey}` })),
    ).toThrow(/CALLER_KEYS: must be set in production/);
    // The callers' names are the default's too; they are no secret.
    expect(() =>
      service.load(production({ CALLER_KEYS: `gateway:${real()},matcher:${real()}` })),
    ).not.toThrow();
  });

  it("never writes the refused value into the error", () => {
    let message = "";
    try {
      service.load(production({ SECRET_KEYS: `${real()},${pepper}` }));
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("SECRET_KEYS");
    expect(message).not.toContain(pepper);
  });
});
