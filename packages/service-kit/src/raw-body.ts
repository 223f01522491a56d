import type { FastifyRequest } from "fastify";

// A JSON body as it arrived, kept for the one check that needs its bytes (a signed internal
// call's body digest); held only as long as the request is.
const rawBodies = new WeakMap<FastifyRequest, string>();

export function rememberRawBody(request: FastifyRequest, body: string): void {
  rawBodies.set(request, body);
}

/** The JSON body as it arrived; undefined when the request had none. */
export function rawBodyOf(request: FastifyRequest): string | undefined {
  return rawBodies.get(request);
}
