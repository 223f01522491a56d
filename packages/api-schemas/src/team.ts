import { z } from "zod";

export const tierSchema = z.enum(["starter", "operator", "team", "custom"]);

export const apiKeySchema = z
  .object({
    id: z.string().describe("Identifier of the key"),
    label: z.string().describe("Free-text label given when the key was issued"),
    last4: z.string().length(4).describe("Last 4 characters of the key"),
    member_id: z.string().describe("Team member the key was issued for"),
    revoked: z.boolean(),
    created_at: z.string().describe("RFC 3339 UTC"),
    age_days: z.number().int().describe("Whole days since the key was issued"),
    rotation_due: z
      .boolean()
      .describe("True once the key is older than 90 days: rotation is recommended, never enforced"),
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
      .describe("Payment-method token from the card processor; the card number never reaches us"),
  })
  .strict()
  .meta({ id: "StartTrialRequest" });

export const startTrialResponseSchema = z
  .object({
    tenant: tenantSchema,
    member: memberSchema,
    api_key: issuedApiKeySchema,
  })
  .meta({ id: "StartTrialResponse" });

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
