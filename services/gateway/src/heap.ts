import { setFlagsFromString } from "node:v8";

/**
 * Node flags the gateway's process starts with. V8 reads these only while it sets up the heap,
 * so they cannot be set from inside the process and Node refuses them in NODE_OPTIONS: every
 * launch line passes them (the image's CMD, the Helm chart, `npm start`, the edge bench), and
 * tests hold the image and the chart to this list.
 *
 * `--no-memory-reducer`: after a few seconds of low allocation V8 shrinks the heap with a
 * mark-compact, and when traffic returns that collection, a second one and the young generation
 * growing back hold the gateway for about 300 ms: a lull's first requests waited 30–120 ms
 * (`bench/edge-auth.ts`, whose gateway idles through the bare server's phases). The gateway's
 * heap after a burst stays at its high-water mark instead, bounded by the old-space limit its
 * deployment sets.
 */
export const GATEWAY_NODE_FLAGS: readonly string[] = ["--no-memory-reducer"];

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
