import { type Operation, requestSchemas } from "@th/api-schemas";
import type { Surface } from "@th/billing";
import { type ErrorCode, errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { EdgeRouteConfig } from "../edge/edge-context.ts";
import { callAs, type OwnerTarget, relay } from "./forward.ts";

/** An operation of the table as the gateway publishes it. */
export type PublicOperation = Operation<ErrorCode, Surface>;

const security = [{ bearerAuth: [] }];

/**
 * What the edge is told of an operation: that it is public, or the surface its tier gate opens
 * and whether its answers cost lead-views. An operation the quota can refuse (`quota_exceeded`)
 * is one that spends lead-views, so a dashboard session must prove its page sent it, a GET
 * included (decision 0343).
 */
export function edgeConfigOf(operation: PublicOperation): EdgeRouteConfig | undefined {
  if (operation.access === "public") {
    return { public: true };
  }
  const edge: EdgeRouteConfig = {};
  if (operation.surface !== undefined) {
    edge.surface = operation.surface;
  }
  if (operation.errors.includes("quota_exceeded")) {
    edge.leadViews = true;
  }
  if (operation.access === "session") {
    edge.sessionOnly = true;
  }
  return Object.keys(edge).length > 0 ? edge : undefined;
}

/**
 * The route options of an operation: its tier gate and the schema it is validated and
 * documented with, taken from the table.
 */
export function publicRoute<const O extends PublicOperation>(operation: O) {
  const access = operation.access ?? "key";
  const edge = edgeConfigOf(operation);
  return {
    ...(edge !== undefined ? { config: { edge } } : {}),
    schema: {
      tags: [...operation.tags],
      ...(access === "key" ? { security } : {}),
      operationId: operation.operationId,
      ...(operation.summary !== undefined ? { summary: operation.summary } : {}),
      ...requestSchemas(operation),
      response: { ...operation.responses, ...errorResponses(...operation.errors) },
    },
  };
}

/**
 * The operation's path on its owner's internal API with these parameters and query, and the
 * route it means there, which the call is signed for (decision 0320).
 */
export function ownerTarget(
  operation: PublicOperation,
  params: Record<string, string>,
  query?: string | URLSearchParams,
): OwnerTarget {
  const path = operation.internalPath.replace(
    /::|:(\w+)(\((?:[^()\\]|\\.)*\))?/g,
    (match, name: string | undefined) =>
      name === undefined ? ":" : encodeURIComponent(params[name] ?? match),
  );
  const search = query === undefined ? "" : String(query);
  return { path: search === "" ? path : `${path}?${search}`, route: operation.internalPath };
}

/**
 * The owner's internal target for this request: the operation's internal path with the
 * request's parameters, and the request's query string as the caller wrote it.
 */
export function internalUrl(operation: PublicOperation, request: FastifyRequest): OwnerTarget {
  const query = request.url.indexOf("?");
  return ownerTarget(
    operation,
    (request.params ?? {}) as Record<string, string>,
    query === -1 ? undefined : request.url.slice(query + 1),
  );
}

/**
 * Calls the operation's owner with the request's body if any: as the authenticated caller, or
 * with no caller for a public operation.
 */
export async function callOwner(
  upstream: InternalClient,
  operation: PublicOperation,
  request: FastifyRequest,
) {
  const target = internalUrl(operation, request);
  const body = operation.body !== undefined ? request.body : undefined;
  if (operation.access === "public") {
    return upstream.send(operation.method, target.path, {
      route: target.route,
      requestId: request.id,
      ...(body !== undefined ? { body } : {}),
    });
  }
  return callAs(upstream, request, operation.method, target, body);
}

/**
 * Registers an operation whose answer is the owner's, unchanged: a 204 stays empty, anything
 * else is relayed with its status.
 */
export function forwardOperation(
  app: HttpApp,
  operation: PublicOperation,
  upstream: InternalClient,
): void {
  app.route({
    method: operation.method,
    url: operation.path,
    ...publicRoute(operation),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const answer = await callOwner(upstream, operation, request);
      return answer.status === 204 ? reply.status(204).send(null) : relay(reply, answer);
    },
  });
}
