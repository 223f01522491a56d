import { z } from "zod";
import { PASSWORD_LENGTH } from "./catalogue.ts";

export const tierSchema = z.enum(["starter", "operator", "team", "custom"]);

export const apiKeySchema = z
  .object({
    id: z.string().describe("Identifier of the key"),
    label: z.string().describe("Free-text label given when the key was issued"),
    last4: z.string().length(4).describe("Last 4 characters of the key"),
    member_id: z.string().describe("Team member the key was issued for"),
    member_removed: z
      .boolean()
      .describe(
        "True once that member has been removed from the team. The key belongs to the tenant, not to the member, and keeps working until it is revoked.",
      ),
    revoked: z.boolean(),
    created_at: z.string().describe("RFC 3339 UTC"),
    age_days: z.number().int().describe("Whole days since the key was issued"),
    rotation_due: z
      .boolean()
      .describe(
        "True once the key is older than 90 days (strictly): rotation is recommended, never enforced",
      ),
    replaces_key_id: z
      .string()
      .nullable()
      .describe("The key this one was issued to replace, in a two-step rotation"),
    replaced_by_key_id: z
      .string()
      .nullable()
      .describe(
        "An active key issued to replace this one: deploy it, then revoke this one (the rotation's second step)",
      ),
  })
  .meta({ id: "ApiKey" });

export const issuedApiKeySchema = apiKeySchema
  .extend({
    secret: z
      .string()
      .describe("The full key. Shown in this response only; it cannot be retrieved again."),
  })
  .meta({ id: "IssuedApiKey" });

export const issueApiKeyBodySchema = z
  .object({ label: z.string().trim().min(1).max(100) })
  .strict()
  .meta({ id: "IssueApiKeyRequest" });

export const memberSchema = z
  .object({
    id: z.string(),
    email: z.email(),
    role: z.enum(["admin", "member"]),
    created_at: z.string(),
  })
  .meta({ id: "Member" });

/** `DELETE /v1/team/members/{member_id}`: revoking the member's keys is a separate, explicit choice. */
export const removeMemberQuerySchema = z
  .object({
    revoke_keys: z
      .enum(["true", "false"])
      .default("false")
      .describe(
        "true: also revoke every active key this member issued. By default the keys stay active: they belong to the tenant, not to the member.",
      ),
  })
  .strict();

export const addMemberBodySchema = z
  .object({ email: z.email().max(254), role: z.enum(["admin", "member"]).default("member") })
  .strict()
  .meta({ id: "AddMemberRequest" });

export const tenantSchema = z
  .object({
    id: z.string(),
    company: z.string(),
    tier: tierSchema,
    status: z.enum(["trialing", "active", "cancelled"]),
    seats: z.number().int(),
    lead_views_per_month: z.number().int(),
    rate_per_minute: z.number().int(),
    concurrent_webhooks: z.number().int(),
    trial_ends_at: z.string().describe("No charge is made before this instant"),
    billing_anniversary: z
      .string()
      .describe(
        "UTC day of activation; the monthly quota resets at 00:00 UTC on this day of each month (the month's last day when shorter)",
      ),
    card: z.object({ brand: z.string(), last4: z.string() }),
    standing: z
      .enum(["good", "past_due", "suspended"])
      .describe(
        "past_due: a payment failed and the grace period runs, reads go on; suspended: the grace ran out and paid reads answer 402 payment_required until a payment succeeds",
      ),
    next_charge_at: z
      .string()
      .nullable()
      .describe(
        "When the card is charged next: the trial's end while trialing, then each billing anniversary",
      ),
  })
  .meta({ id: "Tenant" });

export const startTrialBodySchema = z
  .object({
    tier: tierSchema,
    company: z.string().trim().min(1).max(200),
    admin_email: z.email().max(254),
    payment_method: z
      .string()
      .min(3)
      .max(200)
      .describe(
        "The card's payment-method id from the processor's own card element (Stripe: pm_…); the card number never reaches us. The built-in test processor takes test tokens such as pm_card_visa",
      ),
    admin_password: z
      .string()
      .min(PASSWORD_LENGTH.min)
      .max(PASSWORD_LENGTH.max)
      .optional()
      .describe(
        "The first admin's dashboard password. Without it the response carries a one-time password_setup token instead.",
      ),
  })
  .strict()
  .meta({ id: "StartTrialRequest" });

export const passwordTokenSchema = z
  .object({
    member_id: z.string(),
    purpose: z.enum(["trial", "invite", "reset"]),
    token: z
      .string()
      .describe(
        "One-time token (thpw_…) to set the member's password; shown in this response only",
      ),
    expires_at: z.string(),
  })
  .meta({ id: "PasswordToken" });

export const startTrialResponseSchema = z
  .object({
    tenant: tenantSchema,
    member: memberSchema,
    api_key: issuedApiKeySchema,
    password_setup: passwordTokenSchema
      .nullable()
      .optional()
      .describe(
        "When no admin_password was given: a one-time token to set the first admin's dashboard password (POST /v1/public/password), valid 7 days",
      ),
  })
  .meta({ id: "StartTrialResponse" });

export const trialActionSchema = z
  .object({
    status: z.literal("requires_action"),
    client_secret: z
      .string()
      .describe(
        "The SetupIntent's client secret: complete the card's authentication with Stripe.js (confirmCardSetup), then send it to POST /v1/public/trials/confirm. Nothing is active yet and no key is issued",
      ),
  })
  .meta({ id: "TrialActionRequired" });

export const confirmTrialBodySchema = z
  .object({
    client_secret: z
      .string()
      .max(200)
      .regex(/^seti_[A-Za-z0-9]+_secret_[A-Za-z0-9]+$/, "must be a SetupIntent client secret")
      .describe("The client_secret a trial start answered with, after its authentication"),
  })
  .strict()
  .meta({ id: "ConfirmTrialRequest" });

export const compromiseResponseSchema = z
  .object({
    revoked_key_ids: z.array(z.string()),
    webhook_secrets_rotation: z.literal("requested"),
    api_key: issuedApiKeySchema,
  })
  .meta({ id: "CompromiseResponse" });

export const changeTierBodySchema = z
  .object({ tier: tierSchema })
  .strict()
  .meta({ id: "ChangeTierRequest" });

export const contactBodySchema = z
  .object({
    name: z.string().trim().min(1).max(200),
    email: z.email().max(254),
    company: z.string().trim().max(200).optional(),
    message: z.string().trim().min(1).max(5000),
  })
  .strict()
  .meta({ id: "ContactRequest" });

export const contactResponseSchema = z
  .object({ id: z.string(), received_at: z.string() })
  .meta({ id: "ContactReceipt" });

export const passwordSchema = z
  .string()
  .min(PASSWORD_LENGTH.min, `must be at least ${PASSWORD_LENGTH.min} characters`)
  .max(PASSWORD_LENGTH.max, `must be at most ${PASSWORD_LENGTH.max} characters`);

export const setPasswordBodySchema = z
  .object({ token: z.string().min(10).max(200), password: passwordSchema })
  .strict()
  .meta({ id: "SetPasswordRequest" });

export const changePasswordBodySchema = z
  .object({ current_password: z.string().min(1).max(200), new_password: passwordSchema })
  .strict()
  .meta({ id: "ChangePasswordRequest" });

export const signInBodySchema = z
  .object({
    email: z.email().max(254),
    password: z.string().min(1).max(200),
    tenant_id: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe("Only when the email belongs to members of several tenants"),
  })
  .strict()
  .meta({ id: "SignInRequest" });

/** A tenant as the keys service hands it to the edge: tier, status, limits and billing dates. */
export const edgeTenantSchema = z.object({
  tenant_id: z.string(),
  revision: z.number(),
  tier: z.string(),
  status: z.string(),
  limits: z.object({
    lead_views_per_month: z.number(),
    rate_per_minute: z.number(),
    concurrent_webhooks: z.number(),
    seats: z.number(),
  }),
  billing_anniversary: z.string().nullable(),
  trial_ends_at: z.string().nullable(),
  changed_at: z.string(),
  standing: z.enum(["good", "past_due", "suspended"]).optional(),
});

/** What the keys service tells the gateway about a member who may hold a dashboard session. */
export const sessionMemberSchema = z.object({
  member: z.object({ id: z.string(), email: z.string(), role: z.enum(["admin", "member"]) }),
  company: z.string(),
  tenant: edgeTenantSchema,
});

export const dashboardSessionSchema = z
  .object({
    member: z.object({ id: z.string(), email: z.string(), role: z.enum(["admin", "member"]) }),
    tenant: z.object({ id: z.string(), company: z.string(), tier: tierSchema }),
    csrf_token: z
      .string()
      .describe("Send as X-CSRF-Token on every state-changing call; also in the th_csrf cookie"),
    expires_at: z.string().describe("When the access cookie expires; refresh before"),
    refresh_expires_at: z.string().describe("When the session ends and a new sign-in is needed"),
  })
  .meta({ id: "DashboardSession" });
