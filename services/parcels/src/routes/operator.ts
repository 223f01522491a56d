import type { Pool } from "@th/db";
import { errorResponses, type HttpApp } from "@th/service-kit";
import { z } from "zod";
import { listIngestRuns } from "../db/ingest-runs.ts";

const count = z.number().int();

const ingestRunsSchema = z.object({
  ingest_runs: z.array(
    z.object({
      ingest_id: z.string(),
      source_file: z.string(),
      kind: z.string(),
      started_at: z.string(),
      finished_at: z.string().nullable(),
      rows_read: count,
      rows_new: count,
      rows_changed: count,
      rows_unchanged: count,
      rows_rejected: count,
    }),
  ),
});

/**
 * The operators' read of the roll ingests: which files ran, when, and what each counted (a run
 * without `finished_at` is running or died). Signed like every internal call.
 */
export function registerOperatorRoutes(app: HttpApp, deps: { pool: Pool }) {
  app.get(
    "/internal/v1/operator/ingest-runs",
    {
      schema: {
        tags: ["operator"],
        operationId: "listIngestRuns",
        summary: "The most recent roll ingests, newest first",
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(500).default(20) }),
        response: { 200: ingestRunsSchema, ...errorResponses("unauthorized") },
      },
    },
    async (request) => ({ ingest_runs: await listIngestRuns(deps.pool, request.query.limit) }),
  );
}
