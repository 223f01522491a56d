import {
  foliosFromHeader,
  INTERNAL_HEADERS,
  type InternalCall,
  type InternalClient,
  type InternalReply,
  type InternalText,
  parseInternalJson,
} from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { tenancyOf } from "../edge/authenticate.ts";

/** A path on an owner's internal API and the route it means there (the call is signed for it). */
export interface OwnerTarget {
  path: string;
  route: string;
}

/** The path and route of a target; a plain path means the route of the same (literal) path. */
function targetOf(target: string | OwnerTarget): { path: string; route?: string } {
  return typeof target === "string" ? { path: target } : target;
}

/** The owner's path for `target` and the call that carries the authenticated caller to it. */
function asCaller(
  request: FastifyRequest,
  target: string | OwnerTarget,
  body: unknown,
): [string, InternalCall] {
  const { path, route } = targetOf(target);
  return [
    path,
    {
      ...(route !== undefined ? { route } : {}),
      identity: tenancyOf(request),
      requestId: request.id,
      ...(body !== undefined ? { body } : {}),
    },
  ];
}

/** Calls the owning service as the authenticated caller. */
export function callAs(
  upstream: InternalClient,
  request: FastifyRequest,
  method: string,
  target: string | OwnerTarget,
  body?: unknown,
): Promise<InternalReply> {
  return upstream.send(method, ...asCaller(request, target, body));
}

/**
 * The same call, keeping the answer's text, for a route that passes a 200 through unchanged
 * (`sendJsonText`).
 */
export function callAsText(
  upstream: InternalClient,
  request: FastifyRequest,
  method: string,
  target: string | OwnerTarget,
  body?: unknown,
): Promise<InternalText> {
  return upstream.sendText(method, ...asCaller(request, target, body));
}

/**
 * Replies with JSON the owning service wrote through the same public schema this route
 * declares: parsing it and writing it again would give the same bytes at a cost per read
 * (decision 0200).
 */
export function sendJsonText(reply: FastifyReply, text: string) {
  return reply.type("application/json; charset=utf-8").send(text);
}

/**
 * The folios of the leads in a lead answer, from the header the parcels service sets; from the
 * body when the answer has no such header.
 */
export function foliosOfLeads(upstream: InternalText, fromBody: (body: unknown) => string[]) {
  return (
    foliosFromHeader(upstream.headers[INTERNAL_HEADERS.folios]) ??
    fromBody(parseInternalJson(upstream.text))
  );
}

/** Replies with the owning service's status and body, from its text. */
export function relayText(reply: FastifyReply, upstream: InternalText) {
  return reply.status(upstream.status).send(parseInternalJson(upstream.text));
}

/** Replies with the owning service's status and body; both already follow the public shapes. */
export function relay(reply: FastifyReply, upstream: InternalReply) {
  return reply.status(upstream.status).send(upstream.body);
}
