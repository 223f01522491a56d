import { z } from "zod";
import { tenantSchema, tierSchema } from "./team.ts";

const invoiceSchema = z
  .object({
    id: z.string(),
    number: z.string().nullable(),
    status: z
      .string()
      .describe("The processor's invoice status: draft, open, paid, uncollectible or void"),
    amount_due_cents: z.number().int(),
    amount_paid_cents: z.number().int(),
    currency: z.string(),
    created_at: z.string(),
    period_start: z.string(),
    period_end: z.string(),
    hosted_invoice_url: z
      .string()
      .nullable()
      .describe("The processor's hosted page of the invoice, where it can be viewed and paid"),
  })
  .meta({ id: "Invoice" });

const tierPriceSchema = z
  .object({
    tier: tierSchema,
    label: z.string(),
    monthly_price_cents: z.number().int(),
    limits: z.object({
      seats: z.number().int(),
      lead_views_per_month: z.number().int(),
      rate_per_minute: z.number().int(),
      concurrent_webhooks: z.number().int(),
    }),
  })
  .meta({ id: "TierPrice" });

export const billingSchema = z
  .object({
    tenant: tenantSchema,
    grace_ends_at: z
      .string()
      .nullable()
      .describe("While past due: when paid reads stop unless the payment is made. Null otherwise"),
    invoices: z
      .array(invoiceSchema)
      .nullable()
      .describe("The latest invoices, newest first; null when the processor cannot be reached"),
    tiers: z.array(tierPriceSchema).describe("Every tier's monthly price and limits"),
  })
  .meta({ id: "Billing" });
