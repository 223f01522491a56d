import {
  changePassword,
  issuePasswordToken,
  passwordTokenSchema,
  requestSchemas,
  sessionMemberSchema,
  setPassword,
  signInBodySchema,
} from "@th/api-schemas";
import { ApiError, errorResponses, type HttpApp, internalCaller } from "@th/service-kit";
import { z } from "zod";
import type { Accounts } from "../db/accounts.ts";
import { SESSION_LIFETIME_SECONDS } from "../domain/sessions.ts";

const memberIdParams = z.object({ member_id: z.string().min(1).max(64) });
const sessionIdSchema = z.string().min(1).max(64);

/** A session as the gateway needs it to sign its cookies (decision 0337). */
const openSessionSchema = sessionMemberSchema.extend({
  session: z.object({
    id: z.string(),
    /** The member's session epoch the session belongs to; carried in its access tokens. */
    epoch: z.number().int(),
    /** The next refresh token; null for a second refresh within the grace (an access token only). */
    refresh_token: z.string().nullable(),
    expires_at: z.string(),
  }),
});

/** A password set or changed: the member, and the epoch that their older tokens now fall below. */
const passwordSetSchema = z.object({ member_id: z.string(), session_epoch: z.number().int() });

/**
 * Dashboard sign-in, sessions and one-time password links. Sign-in opens a session here; the
 * gateway refreshes and ends it here, and learns from a password change or reset the epoch at
 * which the member's older tokens stop working.
 */
export function registerInternalPasswordRoutes(app: HttpApp, accounts: Accounts): void {
  registerSessionRoutes(app, accounts);
  registerPasswordRoutes(app, accounts);
}

function registerSessionRoutes(app: HttpApp, accounts: Accounts): void {
  app.post(
    "/internal/v1/sessions",
    {
      schema: {
        body: signInBodySchema.extend({
          lifetime_seconds: z
            .number()
            .int()
            .min(SESSION_LIFETIME_SECONDS.min)
            .max(SESSION_LIFETIME_SECONDS.max),
        }),
        response: { 201: openSessionSchema, ...errorResponses("unauthorized", "conflict") },
      },
    },
    async (request, reply) => {
      const opened = await accounts.signIn(request.body);
      if (!opened) {
        throw new ApiError("unauthorized", "email or password is not correct");
      }
      return reply.status(201).send(opened);
    },
  );

  app.post(
    "/internal/v1/sessions/refresh",
    {
      schema: {
        body: z
          .object({ session_id: sessionIdSchema, refresh_token: z.string().min(1).max(200) })
          .strict(),
        response: { 200: openSessionSchema, ...errorResponses("unauthorized") },
      },
    },
    async (request) => accounts.refreshSession(request.body.session_id, request.body.refresh_token),
  );

  app.post(
    "/internal/v1/sessions/end",
    {
      schema: {
        body: z.object({ session_id: sessionIdSchema }).strict(),
        response: { 204: z.null(), ...errorResponses() },
      },
    },
    async (request, reply) => {
      await accounts.endSession(request.body.session_id);
      return reply.status(204).send(null);
    },
  );

  app.get(
    "/internal/v1/members/:member_id/session",
    {
      schema: {
        params: memberIdParams,
        response: { 200: sessionMemberSchema, ...errorResponses("not_found") },
      },
    },
    async (request) => {
      const state = await accounts.sessionState(request.params.member_id);
      if (!state) {
        throw new ApiError("not_found", "no active member with this id");
      }
      return state;
    },
  );
}

function registerPasswordRoutes(app: HttpApp, accounts: Accounts): void {
  app.post(
    issuePasswordToken.internalPath,
    {
      schema: {
        ...requestSchemas(issuePasswordToken),
        response: { 201: passwordTokenSchema, ...errorResponses("forbidden", "not_found") },
      },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send(await accounts.issuePasswordToken(internalCaller(request), request.params.member_id)),
  );

  app.post(
    setPassword.internalPath,
    {
      schema: {
        ...requestSchemas(setPassword),
        response: { 200: passwordSetSchema, ...errorResponses("not_found") },
      },
    },
    async (request) => accounts.redeemPasswordToken(request.body.token, request.body.password),
  );

  app.put(
    changePassword.internalPath,
    {
      schema: {
        ...requestSchemas(changePassword),
        response: { 200: passwordSetSchema, ...errorResponses("forbidden") },
      },
    },
    async (request) =>
      accounts.changePassword(
        internalCaller(request),
        request.body.current_password,
        request.body.new_password,
      ),
  );
}
