// Which stores the integration suites run against: this machine's Postgres and Redis with a dev
// broker per test file, or containers of the customer's stack (PostgreSQL, Redis, Apache Kafka).
// Decided once per test run, by the global setup; fixtures read the decision from RESOLVED_VAR.

export type TestStoresMode = "containers" | "local";

export interface TestStoresChoice {
  readonly mode: TestStoresMode;
  /** Why, for the line the test run prints. */
  readonly reason: string;
}

/** What a developer or CI sets: `containers`, `local`, or nothing (containers when Docker answers). */
export const REQUEST_VAR = "TEST_STORES";
/** What the global setup decided, for the test files' fixtures (workers inherit its env). */
export const RESOLVED_VAR = "TH_TEST_STORES_RESOLVED";

export function chooseTestStores(
  requested: string | undefined,
  docker: { reachable: boolean; where: string },
): TestStoresChoice {
  const wanted = requested?.trim().toLowerCase() || undefined;
  if (wanted !== undefined && wanted !== "containers" && wanted !== "local") {
    throw new Error(`${REQUEST_VAR} must be "containers" or "local", not "${requested}"`);
  }
  if (wanted === "containers") {
    // testcontainers finds the engine itself (TLS engines, Podman, its properties file), and
    // says why when there is none: no ping of ours stands in its way.
    return { mode: "containers", reason: `${REQUEST_VAR}=containers` };
  }
  if (wanted === "local") {
    return { mode: "local", reason: `${REQUEST_VAR}=local` };
  }
  return docker.reachable
    ? { mode: "containers", reason: `a Docker engine answers at ${docker.where}` }
    : { mode: "local", reason: `no Docker engine answers at ${docker.where}` };
}

/** The decision the global setup left for this test file; `local` when there was none. */
export function resolvedMode(
  env: Readonly<Record<string, string | undefined>> = process.env,
): TestStoresMode {
  return env[RESOLVED_VAR] === "containers" ? "containers" : "local";
}
