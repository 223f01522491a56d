import type { InternalClient, InternalReply } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { tenancyOf } from "../edge/authenticate.ts";

/** Calls the owning service as the authenticated caller. */
export async function callAs(
  upstream: InternalClient,
  request: FastifyRequest,
  method: string,
  path: string,
  body?: unknown,
): Promise<InternalReply> {
  const tenancy = tenancyOf(request);
  return upstream.send(method, path, {
    identity: tenancy,
    requestId: request.id,
    ...(body !== undefined ? { body } : {}),
  });
}

/** Replies with the owning service's status and body; both already follow the public shapes. */
export function relay(reply: FastifyReply, upstream: InternalReply) {
  return reply.status(upstream.status).send(upstream.body);
}
