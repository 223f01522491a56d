import { setFlagsFromString } from "node:v8";

/**
 * Turns off V8's allocation-site pretenuring for the gateway. Under steady load, objects of a
 * request that happen to be in flight when the young generation is collected teach V8 that
 * their allocation sites make long-lived objects; it then allocates those sites' objects straight
 * into the old generation, where every young object they point to survives the next collections
 * too. The gateway's young collections then grew from about 2.5 ms to 5–15 ms and its p99 with
 * them (`bench/edge-auth.ts`). A gateway's objects live for one request or for the process, so
 * the guess never pays here. Called before the service takes traffic.
 */
export function tuneHeapForRequests(): void {
  setFlagsFromString("--no-allocation-site-pretenuring");
}
