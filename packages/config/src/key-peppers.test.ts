import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { baseShape, DEV_SECRETS, defineConfig, pepperOf, vars } from "./index.ts";
import { keyPeppersOf, parseKeyPeppers } from "./key-peppers.ts";

const a = randomBytes(32);
const b = randomBytes(32);

describe("KEY_PEPPER versions (decision 0345)", () => {
  it("reads the single pepper a deployment always had as version 1, in hex or base64", () => {
    for (const written of [a.toString("hex"), a.toString("base64")]) {
      expect(keyPeppersOf({ KEY_PEPPER: written })).toEqual({
        current: { version: 1, key: a },
        all: [{ version: 1, key: a }],
      });
    }
  });

  it("reads version:key pairs with the first as current, whatever its number", () => {
    const peppers = keyPeppersOf({
      KEY_PEPPER: `2:${b.toString("hex")}, 1:${a.toString("base64")}`,
    });
    expect(peppers.current).toEqual({ version: 2, key: b });
    expect(peppers.all).toEqual([
      { version: 2, key: b },
      { version: 1, key: a },
    ]);
    // Listing the older version first keeps it current: a rotation's first step.
    expect(
      keyPeppersOf({ KEY_PEPPER: `1:${a.toString("hex")},2:${b.toString("hex")}` }).current,
    ).toEqual({ version: 1, key: a });
    expect(pepperOf({ KEY_PEPPER: `2:${b.toString("hex")},1:${a.toString("hex")}` })).toEqual(b);
  });

  it.each([
    ["a short key", `2:${"ab".repeat(16)}`],
    ["a version named twice", `2:${a.toString("hex")},2:${b.toString("hex")}`],
    ["version 0", `0:${a.toString("hex")}`],
    ["a version beyond a smallint", `40000:${a.toString("hex")}`],
    ["an empty item", `2:${a.toString("hex")},`],
    [
      "a key without its version among versioned ones",
      `2:${a.toString("hex")},${b.toString("hex")}`,
    ],
  ])("refuses %s, without quoting the value", (_, value) => {
    const parsed = parseKeyPeppers(value);
    expect(parsed).toHaveProperty("problem");
    expect(JSON.stringify(parsed)).not.toContain(a.toString("hex"));
    const config = defineConfig({ KEY_PEPPER: vars.keyPeppers() });
    expect(() => config.load({ KEY_PEPPER: value })).toThrow(/KEY_PEPPER/);
  });

  it("refuses the development pepper kept as an older version in production", () => {
    const config = defineConfig(
      {
        NODE_ENV: baseShape.NODE_ENV,
        KEY_PEPPER: vars.keyPeppers().default(DEV_SECRETS.KEY_PEPPER),
      },
      { devDefaults: DEV_SECRETS },
    );
    expect(() =>
      config.load({
        NODE_ENV: "production",
        KEY_PEPPER: `2:${b.toString("hex")},1:${DEV_SECRETS.KEY_PEPPER}`,
      }),
    ).toThrow(/KEY_PEPPER: must be set in production/);
    expect(() =>
      config.load({
        NODE_ENV: "production",
        KEY_PEPPER: `2:${b.toString("hex")},1:${a.toString("hex")}`,
      }),
    ).not.toThrow();
  });
});
