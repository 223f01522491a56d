import { z } from "zod";
import {
  changePasswordBodySchema,
  confirmTrialBodySchema,
  contactBodySchema,
  contactResponseSchema,
  passwordTokenSchema,
  setPasswordBodySchema,
  startTrialBodySchema,
  startTrialResponseSchema,
  trialActionSchema,
} from "../team.ts";
import { defineOperation } from "./operation.ts";

// Signing up and dashboard passwords, owned by the keys service. The public site's forms take no
// key (each client IP has its own limit); a password is changed from a dashboard session.

const owner = "keys";
const noContent = z.null().describe("No content");

export const startTrial = defineOperation({
  operationId: "startTrial",
  method: "POST",
  path: "/v1/public/trials",
  internalPath: "/internal/v1/trials",
  owner,
  tags: ["public"],
  access: "public",
  summary:
    "Start a 14-day trial of any tier with a card's payment-method token; the card is confirmed and nothing is charged before day 14. The trial activates when the card is confirmed, and the first API key is in this response only. A card that asks for 3-D Secure answers 202 with the SetupIntent's client secret instead: authenticate it in the browser, then confirm the trial. One trial per card (409); limited per client address and per email domain (429).",
  body: startTrialBodySchema,
  responses: { 201: startTrialResponseSchema, 202: trialActionSchema },
  errors: ["payment_declined", "conflict", "rate_limited"],
});

export const confirmTrial = defineOperation({
  operationId: "confirmTrial",
  method: "POST",
  path: "/v1/public/trials/confirm",
  internalPath: "/internal/v1/trials/confirm",
  owner,
  tags: ["public"],
  access: "public",
  summary:
    "Activate a trial whose card asked for 3-D Secure, after the browser completed it: the card's confirmation is read back from the processor, and the first API key is in this response only (a repeat is 409). Refused (402) while the authentication has not succeeded.",
  body: confirmTrialBodySchema,
  responses: { 201: startTrialResponseSchema },
  errors: ["not_found", "payment_declined", "conflict", "rate_limited"],
});

export const contactSales = defineOperation({
  operationId: "contactSales",
  method: "POST",
  path: "/v1/public/contact",
  internalPath: "/internal/v1/contact",
  owner,
  tags: ["public"],
  access: "public",
  summary: "Send a message to the team (custom tiers, questions)",
  body: contactBodySchema,
  responses: { 202: contactResponseSchema },
  errors: ["rate_limited"],
});

/** The public site's forms, in the order the gateway registers them. */
export const signUpOperations = [startTrial, confirmTrial, contactSales] as const;

export const changePassword = defineOperation({
  operationId: "changePassword",
  method: "PUT",
  path: "/v1/dashboard/password",
  internalPath: "/internal/v1/me/password",
  owner,
  tags: ["dashboard"],
  access: "session",
  summary: "Change the signed-in member's own password",
  body: changePasswordBodySchema,
  responses: { 204: noContent },
  errors: ["unauthorized", "forbidden", "rate_limited"],
});

export const setPassword = defineOperation({
  operationId: "setPassword",
  method: "POST",
  path: "/v1/public/password",
  internalPath: "/internal/v1/password",
  owner,
  tags: ["public"],
  access: "public",
  summary:
    "Set a dashboard password with a one-time token (trial start, invite or reset by an admin)",
  body: setPasswordBodySchema,
  responses: { 204: noContent },
  errors: ["not_found", "rate_limited"],
});

export const issuePasswordToken = defineOperation({
  operationId: "issuePasswordToken",
  method: "POST",
  path: "/v1/team/members/:member_id/password-token",
  internalPath: "/internal/v1/members/:member_id/password-token",
  owner,
  tags: ["team"],
  surface: "management",
  summary:
    "A one-time link token for a member to set a password: an invite, or a reset once one is set",
  params: z.object({ member_id: z.string().min(1).max(64) }),
  responses: { 201: passwordTokenSchema },
  errors: ["unauthorized", "forbidden", "tier_required", "not_found", "rate_limited"],
});

/** Dashboard passwords, in the order the gateway registers them. */
export const passwordOperations = [changePassword, setPassword, issuePasswordToken] as const;
