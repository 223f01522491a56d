// vitest global setup: decides once which stores the run uses and, for containers, starts
// PostgreSQL and Redis and hands their URLs to every test file. Workers are forked after this
// runs and inherit its environment, so DATABASE_URL and REDIS_URL reach the fixtures as they
// would from the bootstrap.
import { chooseTestStores, REQUEST_VAR, RESOLVED_VAR } from "./choice.ts";
import { describeEndpoint, dockerAnswers, dockerEndpoint } from "./docker.ts";

function say(line: string): void {
  process.stdout.write(`[test stores] ${line}\n`);
}

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const endpoint = dockerEndpoint(process.env.DOCKER_HOST);
  const requested = process.env[REQUEST_VAR];
  // An explicit choice needs no probe; only the automatic one asks the engine.
  const reachable = requested ? false : await dockerAnswers(endpoint);
  const choice = chooseTestStores(requested, { reachable, where: describeEndpoint(endpoint) });
  process.env[RESOLVED_VAR] = choice.mode;
  if (choice.mode === "local") {
    // Host and port only: the URL may carry a password.
    const postgres = new URL(process.env.DATABASE_URL ?? "postgres://127.0.0.1:5432");
    say(
      `local (${choice.reason}): Postgres at ${postgres.hostname}:${postgres.port || 5432}, Redis at 127.0.0.1:6379, a dev broker per test file`,
    );
    return undefined;
  }
  const { IMAGES, startStoreContainers } = await import("./containers.ts");
  say(`containers (${choice.reason}): starting ${IMAGES.postgres} and ${IMAGES.redis}`);
  const stores = await startStoreContainers();
  process.env.DATABASE_URL = stores.databaseUrl;
  process.env.REDIS_URL = stores.redisUrl;
  say(
    `containers: PostgreSQL and Redis up; ${IMAGES.kafka} (KRaft) starts per test file that uses Kafka`,
  );
  return () => stores.stop();
}
