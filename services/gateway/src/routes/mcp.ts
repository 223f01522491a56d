import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { type CallToolResult, isJSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import {
  getLead,
  type Lead,
  leadSchema,
  leadSearchArgumentsSchema,
  listWatchlists,
  pollWatchlistMatches,
  searchLeads,
  searchQueryOf,
} from "@th/api-schemas";
import {
  ApiError,
  errorResponses,
  type HttpApp,
  type InternalClient,
  toApiError,
} from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { ChargeFurtherCalls } from "../edge/batch-calls.ts";
import type { Metering } from "../edge/metering.ts";
import { callAs } from "./forward.ts";
import { registerPipelineTools } from "./mcp-pipeline.ts";
import { ownerTarget } from "./operation.ts";

const MCP_SERVER_NAME = "terminal-house";

/** A tool failure the assistant can act on; quota exhaustion carries the facts of the 402 body. */
function toolError(error: unknown): CallToolResult {
  const apiError = toApiError(error);
  const body = apiError.body();
  return {
    isError: true,
    content: [{ type: "text", text: JSON.stringify(body) }],
  };
}

function upstreamFailure(status: number, body: unknown): ApiError {
  const shaped = body as { error?: string; detail?: string } | undefined;
  if (status === 404) {
    return new ApiError("not_found", shaped?.detail ?? "not found");
  }
  if (status === 400) {
    return new ApiError("invalid_request", shaped?.detail ?? "invalid arguments");
  }
  if (status === 410) {
    // A poll cursor from before the matches kept (decision 0394): start again, not retry.
    const since = (body as { retained_since?: string } | undefined)?.retained_since;
    return new ApiError(
      "cursor_expired",
      shaped?.detail ?? "the cursor has expired",
      since ? { retained_since: since } : {},
    );
  }
  return new ApiError("unavailable", "a backing service did not answer; try again shortly");
}

function quotaHeaders(request: FastifyRequest): Record<string, string> {
  const quota = request.edge?.quota;
  return quota?.remaining === undefined
    ? {}
    : { "x-quota-lead-views-remaining": String(Math.max(0, quota.remaining)) };
}

interface McpDeps {
  parcels: InternalClient;
  matcher: InternalClient;
  /** The pipeline service: with it, the tools list_pipeline, add_to_pipeline, move_pipeline_item. */
  pipeline?: InternalClient;
  metering: Metering;
  /** Charges a batch's further calls to the tenant's rolling minute (`createBatchCharge`). */
  chargeFurtherCalls: ChargeFurtherCalls;
  /** What every answer carries (`securityHeaders`); this route writes its answer itself. */
  securityHeaders: Record<string, string>;
}

/** One MCP server per request (stateless transport), acting as the request's tenant. */
function serverFor(request: FastifyRequest, deps: McpDeps) {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: "1.0.0" });
  registerGetLeadTool(server, request, deps);
  registerSearchLeadsTool(server, request, deps);
  registerListWatchlistsTool(server, request, deps);
  registerListMatchesTool(server, request, deps);
  if (deps.pipeline) {
    registerPipelineTools(server, request, { ...deps, pipeline: deps.pipeline });
  }
  return server;
}

function registerGetLeadTool(server: McpServer, request: FastifyRequest, deps: McpDeps): void {
  server.registerTool(
    "get_lead",
    {
      title: "Get one lead",
      description:
        "Read one Florida parcel lead by folio (county number, dash, county parcel id, e.g. 23-3059010240130): address, owner and mailing address, valuation and estimated equity, sales, signals with reasons. Costs one lead-view, unless this parcel was already read today (UTC).",
      // The REST route's own parameter: MCP reads one folio exactly as GET /v1/leads/{folio} does.
      inputSchema: { folio: getLead.params.shape.folio.describe("The lead's folio") },
      outputSchema: { lead: leadSchema },
    },
    async ({ folio }) => {
      try {
        const upstream = await callAs(
          deps.parcels,
          request,
          "GET",
          ownerTarget(getLead, { folio }),
        );
        if (upstream.status !== 200) {
          throw upstreamFailure(upstream.status, upstream.body);
        }
        const lead = upstream.body as Lead;
        await deps.metering.charge(request, [lead.folio], "mcp");
        return {
          content: [{ type: "text", text: JSON.stringify(lead) }],
          structuredContent: { lead },
        };
      } catch (error) {
        return toolError(error);
      }
    },
  );
}

function registerSearchLeadsTool(server: McpServer, request: FastifyRequest, deps: McpDeps): void {
  server.registerTool(
    "search_leads",
    {
      title: "Search leads",
      description:
        "Find Florida parcel leads by county, city, ZIP, use class, fired signals, value and equity ranges. Returns up to `limit` full leads and a next_cursor; each lead returned costs one lead-view (once per parcel per UTC day).",
      // GET /v1/leads's filters, bounds and signal catalogue, as JSON arguments.
      inputSchema: leadSearchArgumentsSchema.shape,
      outputSchema: { leads: z.array(leadSchema), next_cursor: z.string().nullable() },
    },
    async (input) => {
      try {
        const upstream = await callAs(
          deps.parcels,
          request,
          "GET",
          `${searchLeads.internalPath}?${searchQueryOf(input)}`,
        );
        if (upstream.status !== 200) {
          throw upstreamFailure(upstream.status, upstream.body);
        }
        const page = upstream.body as { leads: Lead[]; next_cursor: string | null };
        await deps.metering.charge(
          request,
          page.leads.map((lead) => lead.folio),
          "mcp",
        );
        return {
          content: [{ type: "text", text: JSON.stringify(page) }],
          structuredContent: { leads: page.leads, next_cursor: page.next_cursor },
        };
      } catch (error) {
        return toolError(error);
      }
    },
  );
}

function registerListWatchlistsTool(
  server: McpServer,
  request: FastifyRequest,
  deps: McpDeps,
): void {
  server.registerTool(
    "list_watchlists",
    {
      title: "List watchlists",
      description:
        "The tenant's watchlists with their recipes and match activity, a page at a time (pass next_cursor back for the next). Free.",
      // GET /v1/watchlists's own query parameters.
      inputSchema: listWatchlists.querystring.shape,
      outputSchema: {
        watchlists: z.array(z.record(z.string(), z.unknown())),
        next_cursor: z.string().nullable(),
      },
    },
    async ({ cursor, limit }) => {
      try {
        const upstream = await callAs(
          deps.matcher,
          request,
          "GET",
          `${listWatchlists.internalPath}?${searchQueryOf({ cursor, limit })}`,
        );
        if (upstream.status !== 200) {
          throw upstreamFailure(upstream.status, upstream.body);
        }
        const body = upstream.body as {
          data?: Record<string, unknown>[];
          next_cursor?: string | null;
        };
        const watchlists = body.data ?? [];
        const next = body.next_cursor ?? null;
        return {
          content: [{ type: "text", text: JSON.stringify({ watchlists, next_cursor: next }) }],
          structuredContent: { watchlists, next_cursor: next },
        };
      } catch (error) {
        return toolError(error);
      }
    },
  );
}

function registerListMatchesTool(server: McpServer, request: FastifyRequest, deps: McpDeps): void {
  server.registerTool(
    "list_matches",
    {
      title: "List a watchlist's matches",
      description:
        "Match summaries of one watchlist (folio, score, signals fired, observed time), oldest first; pass next_cursor back for the matches since. Matches are kept 90 days by default: a cursor older than the matches kept answers cursor_expired with retained_since; call again without a cursor to start from the oldest match kept. Free: use get_lead for the full parcel.",
      // GET /v1/watchlists/{id}/matches's own parameters: its path id and query.
      inputSchema: {
        watchlist_id: pollWatchlistMatches.params.shape.id,
        ...pollWatchlistMatches.querystring.shape,
      },
      outputSchema: {
        matches: z.array(z.record(z.string(), z.unknown())),
        next_cursor: z.string().nullable(),
      },
    },
    async ({ watchlist_id, cursor, limit }) => {
      try {
        const query = searchQueryOf({ cursor, limit });
        const upstream = await callAs(
          deps.matcher,
          request,
          "GET",
          ownerTarget(pollWatchlistMatches, { id: watchlist_id }, query),
        );
        if (upstream.status !== 200) {
          throw upstreamFailure(upstream.status, upstream.body);
        }
        const body = upstream.body as {
          data?: Record<string, unknown>[];
          matches?: Record<string, unknown>[];
          next_cursor?: string | null;
        };
        const matches = body.data ?? body.matches ?? [];
        const next = body.next_cursor ?? null;
        return {
          content: [{ type: "text", text: JSON.stringify({ matches, next_cursor: next }) }],
          structuredContent: { matches, next_cursor: next },
        };
      } catch (error) {
        return toolError(error);
      }
    },
  );
}

/** JSON-RPC 2.0's error codes for a body that is not JSON, and for JSON that is not a request. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
/**
 * A call refused by the tenant's per-minute limit. MCP reserves -32020 to -32099 for its own
 * codes and asks new ones outside JSON-RPC's -32768 to -32000, so HTTP's 429 (decision 0342).
 */
const RATE_LIMITED = 429;
/** The most messages a batch may hold; the SDK's transport refuses more. */
const MAX_BATCH_MESSAGES = 100;

const jsonRpcErrorSchema = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z.null(),
    error: z.object({ code: z.number().int(), message: z.string() }),
  })
  .describe("JSON-RPC error: -32700 for a body that is not JSON, -32600 for any other bad request");

function jsonRpcError(code: number, message: string): z.infer<typeof jsonRpcErrorSchema> {
  return { jsonrpc: "2.0", id: null, error: { code, message } };
}

/** Why a parsed body is not a JSON-RPC 2.0 message or batch; null when it is one. */
function notJsonRpc(body: unknown): string | null {
  const messages = Array.isArray(body) ? body : [body];
  if (messages.length === 0) {
    return "Invalid Request: an empty batch";
  }
  if (messages.length > MAX_BATCH_MESSAGES) {
    return `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages`;
  }
  const wrong = messages.find(
    (message) =>
      message === null ||
      typeof message !== "object" ||
      (message as { jsonrpc?: unknown }).jsonrpc !== "2.0",
  );
  return wrong === undefined
    ? null
    : 'Invalid Request: every message must be an object with "jsonrpc": "2.0"';
}

/**
 * Answers each call of a batch past the first `allowed` with a JSON-RPC error carrying the API's
 * 429 body, without running it; a notification past them is dropped, as it gets no answer. The
 * transport hands the server a batch's messages in their order, so the calls that fit the
 * minute are the first ones, as if sent one by one.
 */
function refuseCallsBeyond(
  transport: StreamableHTTPServerTransport,
  allowed: number,
  refusal: ApiError,
  request: FastifyRequest,
): void {
  const deliver = transport.onmessage;
  let seen = 0;
  transport.onmessage = (message, extra) => {
    seen++;
    if (seen <= allowed) {
      deliver?.(message, extra);
      return;
    }
    if (isJSONRPCRequest(message)) {
      const answer = {
        jsonrpc: "2.0" as const,
        id: message.id,
        error: {
          code: RATE_LIMITED,
          message: `Rate limited: ${refusal.message}`,
          data: refusal.body(request.id),
        },
      };
      transport.send(answer).catch((error: unknown) => {
        request.log.warn({ err: error }, "a refused MCP call could not be answered");
      });
    }
  };
}

/**
 * The MCP endpoint: Streamable HTTP, stateless (a server per request, no session to pin a client
 * to one gateway instance). The edge has already authenticated the Bearer key, charged the
 * tenant's rolling minute and checked that the tier opens MCP; tools meter lead-views exactly as
 * REST reads do.
 */
export function registerMcpRoutes(app: HttpApp, deps: McpDeps): void {
  app.post(
    "/mcp",
    {
      config: { edge: { surface: "mcp" } },
      schema: {
        tags: ["mcp"],
        security: [{ bearerAuth: [] }],
        operationId: "mcp",
        summary:
          "Model Context Protocol (Streamable HTTP, stateless): tools get_lead, search_leads, list_watchlists, list_matches, list_pipeline, add_to_pipeline, move_pipeline_item",
        body: z.unknown(),
        response: {
          200: z
            .unknown()
            .describe("The JSON-RPC response (application/json), or an event stream of them"),
          ...errorResponses("unauthorized", "tier_required", "rate_limited"),
          400: jsonRpcErrorSchema,
        },
      },
      // An MCP client reads a bad request as a JSON-RPC error: a body that is not JSON is a parse
      // error, anything else refused with 400 an invalid request.
      errorHandler: (error, request, reply) => {
        const apiError = toApiError(error);
        if (apiError.status === 400) {
          const parse = (error as { code?: string }).code?.startsWith("FST_ERR_CTP_") === true;
          void reply
            .status(400)
            .send(
              jsonRpcError(
                parse ? PARSE_ERROR : INVALID_REQUEST,
                `${parse ? "Parse error" : "Invalid Request"}: ${apiError.message}`,
              ),
            );
          return;
        }
        // Typed by this route's 400 only; the rest keep the API's error shape.
        void (reply as unknown as FastifyReply)
          .status(apiError.status)
          .headers(apiError.headers)
          .send(apiError.body(request.id));
      },
    },
    async (request, reply) => {
      const invalid = notJsonRpc(request.body);
      if (invalid !== null) {
        return reply.status(400).send(jsonRpcError(INVALID_REQUEST, invalid));
      }
      // Every message of a batch is a call of its own in the tenant's rolling minute; the edge
      // charged the first.
      const calls = Array.isArray(request.body) ? request.body.length : 1;
      const further = await deps.chargeFurtherCalls(request, calls - 1);
      const server = serverFor(request, deps);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      reply.hijack();
      const raw = reply.raw;
      const writeHead = raw.writeHead.bind(raw) as (...args: unknown[]) => typeof raw;
      // Resolves the month's remaining lead-views once; tools then keep it current as they charge.
      const initial = await request.limitHeaders();
      // Named before it is stored: V8 allocates a function literal assigned straight to a
      // property in the old generation, where it would keep this request alive until a full
      // collection.
      const writeHeadWithLimits = (...args: unknown[]) => {
        // Written last, so the headers show the lead-views the tools of this request used.
        const headers = { ...deps.securityHeaders, ...initial, ...quotaHeaders(request) };
        for (const [name, value] of Object.entries(headers)) {
          raw.setHeader(name, value);
        }
        raw.setHeader("x-request-id", request.id);
        return writeHead(...args);
      };
      raw.writeHead = writeHeadWithLimits as typeof raw.writeHead;
      raw.on("close", () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      if (further.refusal) {
        refuseCallsBeyond(transport, 1 + further.allowed, further.refusal, request);
      }
      await transport.handleRequest(request.raw, raw, request.body);
    },
  );

  // GET and DELETE (an SSE stream, a session to end) are refused with 405 and Allow: POST by the
  // handler every service has for a method a path does not take: this endpoint keeps no sessions.
}
