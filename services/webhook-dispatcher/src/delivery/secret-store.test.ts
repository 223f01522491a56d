import { randomBytes } from "node:crypto";
import { inTransaction, type Pool } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../db/migrations.ts";
import { createSecretBox } from "../domain/secrets.ts";
import { createSecretStore } from "./secret-store.ts";

let db: TestDatabase;
/** Secret reads made through the store, counted. */
let reads = 0;
/** While set, a secret read's answer reaches the store only once this settles. */
let holdAnswers: Promise<void> | undefined;
let counting: Pool;

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
  counting = new Proxy(db.pool, {
    get(target, property, receiver) {
      if (property === "query") {
        return (text: string, ...rest: unknown[]) => {
          const answer = (target.query as (...args: unknown[]) => Promise<unknown>)(text, ...rest);
          if (!String(text).includes("FROM endpoint_secrets")) {
            return answer;
          }
          reads++;
          const held = holdAnswers;
          if (!held) {
            return answer;
          }
          return answer.then(async (result) => {
            await held;
            return result;
          });
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
});

afterAll(async () => {
  await db.drop();
});

async function endpointWithSecret() {
  const store = createSecretStore({
    pool: counting,
    box: createSecretBox(`k1:${randomBytes(32).toString("base64")}`),
    now: () => Date.now(),
  });
  const endpointId = `ep_${randomBytes(6).toString("hex")}`;
  await db.pool.query(
    `INSERT INTO endpoints (id, tenant_id, watchlist_id, url, events)
     VALUES ($1, 'tn_secrets', 'wl_secrets', 'https://example.com/hooks', '{watchlist.match}')`,
    [endpointId],
  );
  const secret = await store.create(db.pool, endpointId);
  return { store, endpointId, secret };
}

describe("signing secrets", () => {
  it("attempts of one endpoint that miss the cache together share one read", async () => {
    const { store, endpointId, secret } = await endpointWithSecret();
    reads = 0;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => store.signingSecret(endpointId)),
    );
    expect(reads).toBe(1);
    for (const answer of answers) {
      expect(answer).toBe(secret);
    }
  });

  it("a read that was under way when the endpoint rotated is not kept: the next attempt signs with the new secret", async () => {
    const { store, endpointId, secret } = await endpointWithSecret();
    let release = () => {};
    holdAnswers = new Promise((resolve) => {
      release = resolve;
    });
    // Read before the rotation, answered after it.
    const during = store.signingSecret(endpointId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const rotated = await inTransaction(db.pool, (client) => store.rotate(client, endpointId));
    holdAnswers = undefined;
    release();
    expect(await during).toBe(secret);
    // The rotation retired the old secret at once: the new one alone signs.
    expect(await store.signingSecret(endpointId)).toBe(rotated.secret);
  });
});
