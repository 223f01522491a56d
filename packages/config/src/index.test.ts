import { describe, expect, it, vi } from "vitest";
import {
  ConfigError,
  commonShape,
  DEV_INTERNAL_SIGNING_SECRETS,
  DEV_SECRETS,
  decodeKey,
  defineConfig,
  internalCallerKey,
  parseInternalCallerKeys,
  pepperOf,
  receiverDevDefaults,
  refuseDevDefaultsInProduction,
  serviceShape,
  vars,
  z,
} from "./index.ts";

const config = defineConfig({
  ...commonShape,
  PORT: vars.port(8080),
  PEPPER: vars.secretKey(),
  MODE: z.enum(["a", "b"]).default("a"),
});
const pepper = "ab".repeat(32);

describe("defineConfig", () => {
  it("applies defaults for unset and empty variables", () => {
    const loaded = config.load({ PEPPER: pepper, PORT: "" });
    expect(loaded.PORT).toBe(8080);
    expect(loaded.KAFKA_BROKERS).toEqual(["127.0.0.1:9092"]);
    expect(loaded.NODE_ENV).toBe("development");
  });

  it("coerces numbers, flags and broker lists", () => {
    const loaded = config.load({
      PEPPER: pepper,
      PORT: "9000",
      OTEL_ENABLED: "true",
      KAFKA_BROKERS: "k1:9092, k2:9093",
    });
    expect(loaded.PORT).toBe(9000);
    expect(loaded.OTEL_ENABLED).toBe(true);
    expect(loaded.KAFKA_BROKERS).toEqual(["k1:9092", "k2:9093"]);
  });

  it("fails fast naming every bad variable and the reason", () => {
    let error: unknown;
    try {
      config.load({ PORT: "http", KAFKA_BROKERS: "nohost", DATABASE_URL: "mysql://x" });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const variables = (error as ConfigError).issues.map((issue) => issue.variable).sort();
    expect(variables).toEqual(["DATABASE_URL", "KAFKA_BROKERS", "PEPPER", "PORT"]);
    expect((error as ConfigError).message).toContain("DATABASE_URL: must be a URL starting with");
  });

  it("accepts 32-byte secrets as hex or base64 and refuses shorter ones", () => {
    expect(config.load({ PEPPER: Buffer.alloc(32, 7).toString("base64") }).PEPPER).toBeTruthy();
    expect(() => config.load({ PEPPER: "short" })).toThrow(/PEPPER: must be 32 bytes/);
  });

  it("reads the process's environment when given none", () => {
    const own = defineConfig({ TH_CONFIG_TEST_PEPPER: vars.secretKey() });
    vi.stubEnv("TH_CONFIG_TEST_PEPPER", pepper);
    try {
      expect(own.load().TH_CONFIG_TEST_PEPPER).toBe(pepper);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe("serviceShape", () => {
  const receiver = { service: "parcels", callers: ["gateway"] } as const;

  it("gives a service its ports, an interface to listen on and its callers' keys", () => {
    const service = defineConfig(serviceShape({ port: 8089, internalPort: 9089, ...receiver }));
    expect(service.load({})).toMatchObject({
      PORT: 8089,
      INTERNAL_PORT: 9089,
      HOST: "0.0.0.0",
      INTERNAL_CALLER_KEYS: receiverDevDefaults(receiver).INTERNAL_CALLER_KEYS,
      LOG_LEVEL: "info",
    });
    const keys = `gateway:${"k".repeat(40)}`;
    expect(service.load({ PORT: "1234", INTERNAL_CALLER_KEYS: keys })).toMatchObject({
      PORT: 1234,
      INTERNAL_CALLER_KEYS: keys,
    });
  });

  it("derives the development callers' keys from their development signing roots", () => {
    const keys = parseInternalCallerKeys(receiverDevDefaults(receiver).INTERNAL_CALLER_KEYS);
    expect(keys?.get("gateway")).toBe(
      internalCallerKey(DEV_INTERNAL_SIGNING_SECRETS.gateway, "parcels"),
    );
    expect(keys?.get("gateway")).not.toBe(
      internalCallerKey(DEV_INTERNAL_SIGNING_SECRETS.gateway, "keys"),
    );
  });

  it("refuses a caller the receiver does not accept, a short key and a caller named twice", () => {
    const service = defineConfig(serviceShape({ port: 1, internalPort: 2, ...receiver }));
    for (const value of [
      `webhook-dispatcher:${"k".repeat(40)}`,
      "gateway:short",
      `gateway:${"k".repeat(40)},gateway:${"j".repeat(40)}`,
      "k".repeat(40),
    ]) {
      expect(() => service.load({ INTERNAL_CALLER_KEYS: value })).toThrow(/INTERNAL_CALLER_KEYS/);
    }
  });
});

describe("pepperOf", () => {
  it("gives the pepper's 32 bytes, written as hex or base64", () => {
    const bytes = Buffer.alloc(32, 7);
    expect(pepperOf({ KEY_PEPPER: bytes.toString("hex") })).toEqual(bytes);
    expect(pepperOf({ KEY_PEPPER: bytes.toString("base64") })).toEqual(bytes);
  });
});

describe("refuseDevDefaultsInProduction", () => {
  it("refuses development defaults of secrets only in production", () => {
    const defaults = { TOKEN: "dev" };
    expect(() =>
      refuseDevDefaultsInProduction({ NODE_ENV: "development", TOKEN: "dev" }, defaults),
    ).not.toThrow();
    expect(() =>
      refuseDevDefaultsInProduction({ NODE_ENV: "production", TOKEN: "real" }, defaults),
    ).not.toThrow();
    expect(() =>
      refuseDevDefaultsInProduction({ NODE_ENV: "production", TOKEN: "dev" }, defaults),
    ).toThrow(/TOKEN: must be set in production/);
  });

  it("is applied by load to the secrets a schema declares with a development default", () => {
    const receiver = { service: "keys", callers: ["gateway"] } as const;
    const withKeys = defineConfig(
      { ...commonShape, ...serviceShape({ port: 1, internalPort: 2, ...receiver }) },
      { devDefaults: { ...DEV_SECRETS, ...receiverDevDefaults(receiver) } },
    );
    expect(() => withKeys.load({ NODE_ENV: "production" })).toThrow(
      /INTERNAL_CALLER_KEYS: must be set in production/,
    );
    const keys = `gateway:${"a-real-key-of-this-deployment-".repeat(2)}`;
    expect(
      withKeys.load({ NODE_ENV: "production", INTERNAL_CALLER_KEYS: keys }).INTERNAL_CALLER_KEYS,
    ).toBe(keys);
  });
});

describe("DEV_SECRETS", () => {
  it("hold a well-formed 32-byte pepper", () => {
    expect(decodeKey(DEV_SECRETS.KEY_PEPPER)).toHaveLength(32);
  });
});
