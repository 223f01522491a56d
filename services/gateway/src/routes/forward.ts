import type { FastifyReply, FastifyRequest } from "fastify";
import type { Upstream, UpstreamReply } from "../clients/keys-client.ts";
import { tenancyOf } from "../edge/authenticate.ts";

/** Calls the owning service as the authenticated caller. */
export async function callAs(
  upstream: Upstream,
  request: FastifyRequest,
  method: string,
  path: string,
  body?: unknown,
): Promise<UpstreamReply> {
  const tenancy = tenancyOf(request);
  return upstream.send(method, path, {
    identity: tenancy,
    requestId: request.id,
    ...(body !== undefined ? { body } : {}),
  });
}

/** Replies with the owning service's status and body; both already follow the public shapes. */
export function relay(reply: FastifyReply, upstream: UpstreamReply) {
  return reply.status(upstream.status).send(upstream.body);
}
