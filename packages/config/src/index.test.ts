import { describe, expect, it, vi } from "vitest";
import {
  ConfigError,
  commonShape,
  DEV_SECRETS,
  decodeKey,
  defineConfig,
  pepperOf,
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
  it("gives a service its ports, an interface to listen on and the internal token", () => {
    const service = defineConfig(serviceShape({ port: 8089, internalPort: 9089 }));
    expect(service.load({})).toMatchObject({
      PORT: 8089,
      INTERNAL_PORT: 9089,
      HOST: "0.0.0.0",
      INTERNAL_TOKEN: DEV_SECRETS.INTERNAL_TOKEN,
      LOG_LEVEL: "info",
    });
    expect(service.load({ PORT: "1234", INTERNAL_TOKEN: "x".repeat(16) })).toMatchObject({
      PORT: 1234,
      INTERNAL_TOKEN: "x".repeat(16),
    });
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
    const withToken = defineConfig(
      { ...commonShape, INTERNAL_TOKEN: vars.internalToken() },
      { devDefaults: DEV_SECRETS },
    );
    expect(withToken.load({}).INTERNAL_TOKEN).toBe(DEV_SECRETS.INTERNAL_TOKEN);
    expect(() => withToken.load({ NODE_ENV: "production" })).toThrow(
      /INTERNAL_TOKEN: must be set in production/,
    );
    const token = "a-real-internal-token-of-this-deployment";
    expect(withToken.load({ NODE_ENV: "production", INTERNAL_TOKEN: token }).INTERNAL_TOKEN).toBe(
      token,
    );
  });
});

describe("DEV_SECRETS", () => {
  it("hold a well-formed 32-byte pepper", () => {
    expect(decodeKey(DEV_SECRETS.KEY_PEPPER)).toHaveLength(32);
  });
});
