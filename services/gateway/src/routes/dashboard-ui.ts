import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fastifyStatic from "@fastify/static";
import { type leadPageSchema, leadSearchQuerySchema } from "@th/api-schemas";
import { DASHBOARD_ROUTES } from "@th/dashboard/routes";
import { SIGN_UP_CONTENT_POLICY, SIGN_UP_ROUTE, signUpPage } from "@th/dashboard/sign-up-policy";
import { ApiError, errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply } from "fastify";
import { z } from "zod";
import type { Config } from "../config.ts";
import { tenancyOf } from "../edge/authenticate.ts";
import { callAs, relay } from "./forward.ts";

/** The page may load only its own scripts and styles and talk only to its own origin. */
const HTML_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-cache",
};

interface DashboardUiSettings {
  dir: string;
  /** Stripe's publishable key for the sign-up page's card element (decision 0364). */
  stripePublishableKey?: string | undefined;
  production?: boolean;
}

/** The dashboard's settings from the gateway's configuration. */
export function dashboardUiSettings(
  config: Pick<Config, "DASHBOARD_DIR" | "STRIPE_PUBLISHABLE_KEY" | "NODE_ENV">,
  defaultDir: string,
): DashboardUiSettings {
  return {
    dir: config.DASHBOARD_DIR ?? defaultDir,
    stripePublishableKey: config.STRIPE_PUBLISHABLE_KEY,
    production: config.NODE_ENV === "production",
  };
}

/**
 * The web dashboard's static assets at `/`, one origin with the API. Hashed assets are cached
 * for a year; the page itself is revalidated on every load. Each client-side route answers with
 * the page, so reloads and shared links work; `/v1` and `/mcp` are never touched.
 */
export async function registerDashboardUi(app: HttpApp, deps: DashboardUiSettings): Promise<void> {
  const indexPath = join(deps.dir, "index.html");
  if (!existsSync(indexPath)) {
    for (const route of [...DASHBOARD_ROUTES, SIGN_UP_ROUTE]) {
      app.get(route, { schema: { hide: true } }, async (_request, reply) =>
        reply
          .status(503)
          .type("text/plain; charset=utf-8")
          .send("The dashboard has not been built: `npm start` builds it."),
      );
    }
    return;
  }
  await app.register(fastifyStatic, {
    root: deps.dir,
    prefix: "/",
    wildcard: false,
    index: false,
    preCompressed: true,
    setHeaders(response, path) {
      response.header("x-content-type-options", "nosniff");
      response.header(
        "cache-control",
        path.includes("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
      );
    },
  });
  const page = readFileSync(indexPath);
  const sendPage = async (_request: unknown, reply: FastifyReply) =>
    reply.headers(HTML_HEADERS).type("text/html; charset=utf-8").send(page);
  for (const route of DASHBOARD_ROUTES) {
    app.get(route, { schema: { hide: true } }, sendPage);
  }
  // The sign-up page runs Stripe.js: its own policy names Stripe's sources, and it carries the
  // publishable key (decision 0364). It is a page load of its own, never a client-side route.
  const signUp = signUpPage(page.toString("utf8"), {
    publishableKey: deps.stripePublishableKey,
    production: deps.production ?? false,
  });
  app.get(SIGN_UP_ROUTE, { schema: { hide: true } }, async (_request, reply) =>
    reply
      .headers({ ...HTML_HEADERS, "content-security-policy": SIGN_UP_CONTENT_POLICY })
      .type("text/html; charset=utf-8")
      .send(signUp),
  );
}

const leadSummarySchema = z
  .object({
    folio: z.string(),
    county: z.object({ number: z.number().int(), name: z.string().nullable() }),
    city: z.string().nullable(),
    zip: z.string().nullable(),
    use_class: z.string().nullable(),
    roll_year: z.number().int(),
    signals_fired: z.array(z.string()),
  })
  .meta({ id: "LeadSummary" });

/**
 * The dashboard's lead list: the same search as `GET /v1/leads`, answered with summaries that
 * name no owner, address line or value, and so cost nothing. The full record is one lead-view
 * when the member expands it (`GET /v1/leads/{folio}`). Dashboard sessions only: API clients
 * search with `GET /v1/leads`.
 */
export function registerDashboardLeadRoutes(app: HttpApp, deps: { parcels: InternalClient }): void {
  app.get(
    "/v1/dashboard/leads",
    {
      schema: {
        tags: ["dashboard"],
        operationId: "searchLeadSummaries",
        summary:
          "Dashboard lead search: summaries without owner, address or values; free. Sessions only",
        querystring: leadSearchQuerySchema,
        response: {
          200: z.object({ leads: z.array(leadSummarySchema), next_cursor: z.string().nullable() }),
          ...errorResponses("unauthorized", "forbidden", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      if (!tenancyOf(request).sessionId) {
        throw new ApiError(
          "forbidden",
          "lead summaries are for the dashboard; API clients search with GET /v1/leads",
        );
      }
      const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
      const upstream = await callAs(deps.parcels, request, "GET", `/internal/v1/parcels${query}`);
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const page = upstream.body as z.infer<typeof leadPageSchema>;
      return {
        leads: page.leads.map((lead) => ({
          folio: lead.folio,
          county: lead.county,
          city: lead.address.city,
          zip: lead.address.zip,
          use_class: lead.land_use.use_class,
          roll_year: lead.roll_year,
          signals_fired: lead.signals_fired,
        })),
        next_cursor: page.next_cursor,
      };
    },
  );
}
