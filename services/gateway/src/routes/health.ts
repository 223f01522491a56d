import { errorResponses, type HttpApp } from "@th/service-kit";
import { z } from "zod";

const healthResponse = z
  .object({
    status: z.literal("ok"),
    service: z.string(),
    version: z.string(),
    time: z.string().describe("Server time, RFC 3339 UTC"),
  })
  .meta({ id: "Health" });

/**
 * `GET /v1/health` answers without authentication; an Authorization header, if sent, is ignored,
 * so monitors can share the header set of paid calls. Dependency health lives on /readyz.
 */
export function registerHealthRoutes(app: HttpApp, info: { version: string }): void {
  app.get(
    "/v1/health",
    {
      config: { edge: { public: true } },
      schema: {
        tags: ["health"],
        operationId: "getHealth",
        summary: "Liveness of the public API; needs no key",
        // Public, but still counted per client IP, and a key in the query is refused.
        response: { 200: healthResponse, ...errorResponses("unauthorized", "rate_limited") },
      },
    },
    async () => ({
      status: "ok" as const,
      service: "terminal-house",
      version: info.version,
      time: new Date().toISOString(),
    }),
  );
}
