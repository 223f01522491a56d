import { bodyIssues } from "@th/api-schemas";
import { ApiError, internalCaller } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { z } from "zod";
import type { Actor } from "../domain/items.ts";

/**
 * Refuses a body that failed its schema, naming each failing path (`body.tags[2]`), before
 * anything is written.
 */
export function checkBody(
  request: FastifyRequest & { validationError?: Error },
  schema: z.ZodType,
) {
  if (!request.validationError) {
    return;
  }
  const issues = bodyIssues(schema, request.body);
  throw issues === undefined
    ? request.validationError
    : new ApiError("invalid_request", issues.message, { fields: issues.fields });
}

/** The caller the gateway names, as the author of a change made now. */
export function actorOf(request: FastifyRequest): Actor {
  const caller = internalCaller(request);
  return {
    tenantId: caller.tenantId,
    memberId: caller.memberId,
    // A dashboard session's calls name no API key.
    keyId: caller.keyId.startsWith("key_") ? caller.keyId : null,
    at: new Date().toISOString(),
  };
}
