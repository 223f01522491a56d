import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inYoungGeneration, serverUrl } from "./testing.ts";

// V8 allocates a function literal that is assigned straight to a property
// (`query.callback = (err, res) => ...`) in the old generation. pg created the callback of every
// promise-style query that way, and that function, dead once the query settled, kept the query's
// promise and its result rows alive through young collections until they were promoted. The
// patch in patches/pg@8.23.1.patch names the function first; these tests fail if it is lost.

interface QueuedQuery {
  callback: unknown;
}
/** The query a client is running or about to run (pg keeps it on the client). */
function latestQuery(client: pg.Client): QueuedQuery {
  const internals = client as unknown as {
    _activeQuery: QueuedQuery | null;
    _queryQueue: QueuedQuery[];
  };
  const query = internals._queryQueue.at(-1) ?? internals._activeQuery;
  if (!query) {
    throw new Error("the client holds no query");
  }
  return query;
}

describe("pg query allocation", () => {
  const client = new pg.Client({ connectionString: serverUrl() });
  const timed = new pg.Client({ connectionString: serverUrl(), query_timeout: 10_000 });
  beforeAll(async () => {
    await client.connect();
    await timed.connect();
  });
  afterAll(async () => {
    await client.end();
    await timed.end();
  });

  // The probe's own check, for this test and the gateway's test of the ioredis patch.
  it("tells an old-generation function from a young one (the check itself can fail)", () => {
    const holder: { settle?: () => number } = {};
    holder.settle = () => 1;
    const named = () => 2;
    expect(inYoungGeneration(holder.settle)).toBe(false);
    expect(inYoungGeneration(named)).toBe(true);
  });

  it("allocates a promise-style query's callback young, so its result rows are not promoted", async () => {
    const result = client.query("SELECT 1 AS one");
    expect(inYoungGeneration(latestQuery(client).callback)).toBe(true);
    expect((await result).rows).toEqual([{ one: 1 }]);
  });

  it("allocates the callback young when the client has a read timeout", async () => {
    const result = timed.query("SELECT 2 AS two");
    expect(inYoungGeneration(latestQuery(timed).callback)).toBe(true);
    expect((await result).rows).toEqual([{ two: 2 }]);
  });
});
