import createFetchClient, { type Client } from "openapi-fetch";
import { errorFor } from "./errors.ts";
import type { components, operations, paths } from "./generated/openapi.ts";
import { parseLimits } from "./limits.ts";
import { type Page, Pages, type Result } from "./pages.ts";
import { type RetryOptions, retryingFetch, type Sleep } from "./retry.ts";

type Schemas = components["schemas"];
export type Lead = Schemas["Lead"];
export type Watchlist = Schemas["Watchlist"];
export type WatchlistCreate = Schemas["WatchlistCreate"];
export type WatchlistUpdate = Schemas["WatchlistUpdate"];
export type MatchSummary = Schemas["MatchSummary"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookEndpointWithSecret = Schemas["WebhookEndpointWithSecret"];
export type WebhookDelivery = Schemas["WebhookDelivery"];
export type Usage = Schemas["Usage"];

/** Query parameters the API reads as decimal digits may be given as numbers too. */
type Loose<Query> = {
  [K in keyof Query]?: NonNullable<Query[K]> extends string ? Query[K] | number : Query[K];
};
type QueryOf<Operation extends keyof operations> = NonNullable<
  operations[Operation]["parameters"]["query"]
>;
export type LeadSearch = Omit<Loose<QueryOf<"searchLeads">>, "cursor" | "signals"> & {
  /** Signal names a lead must all have. */
  signals?: string | readonly string[];
};
export type LeadExport = Omit<Loose<QueryOf<"exportLeadsCsv">>, "signals"> & {
  signals?: string | readonly string[];
};

export interface ClientOptions {
  /** The API key (th_live_…); defaults to the TERMINAL_HOUSE_API_KEY environment variable. */
  apiKey?: string;
  /**
   * A page signed in to the web dashboard: its session cookies authenticate the calls, so no key
   * is sent (or needed). The page's own `fetch` adds what the session needs (the CSRF header).
   */
  session?: boolean;
  /** Where the API is served, without /v1 (default http://127.0.0.1:8080, `npm start`'s gateway). */
  baseUrl?: string;
  /**
   * Off by default. When set, a call refused with 429 is sent again after its Retry-After, at
   * most `maxRetries` times and never after waiting more than `maxWaitSeconds`.
   */
  retry?: RetryOptions | boolean;
  /** A fetch of your own (proxies, instrumentation); the global fetch by default. */
  fetch?: typeof fetch;
  /** For tests: how a retry waits. */
  sleep?: Sleep;
}

function environmentKey(): string | undefined {
  // Browsers and other runtimes have no process; the key must then be passed in.
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
    ?.env;
  return env?.TERMINAL_HOUSE_API_KEY || undefined;
}

function queryOf(query: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) {
      continue;
    }
    out[name] = Array.isArray(value) ? value.join(",") : String(value);
  }
  return out;
}

type Outcome<T> = { data?: T; error?: unknown; response: Response };

type Api = Client<paths>;

/**
 * The body of a successful call with its limit headers; a refusal becomes a typed error
 * (QuotaExceededError, RateLimitedError, TierRequiredError, else TerminalHouseError).
 */
async function unwrap<T>(call: Promise<Outcome<T>>): Promise<Result<NonNullable<T>>> {
  const { data, error, response } = await call;
  const limits = parseLimits(response.headers);
  if (!response.ok) {
    throw errorFor(response, error, limits);
  }
  return { data: data as NonNullable<T>, limits, response };
}

/** One page of a paged call: its items and the cursor of the next page. */
async function page<T, B>(
  call: Promise<Outcome<B>>,
  items: (body: NonNullable<B>) => { items: T[]; nextCursor: string | null },
): Promise<Result<Page<T>>> {
  const result = await unwrap(call);
  return { ...result, data: items(result.data) };
}

/** The openapi-fetch client for the key and base URL, retrying 429s when asked to. */
function connect(options: ClientOptions): Api {
  const apiKey = options.session ? undefined : (options.apiKey ?? environmentKey());
  if (!apiKey && !options.session) {
    throw new Error("no API key: pass apiKey or set TERMINAL_HOUSE_API_KEY");
  }
  const baseUrl = (options.baseUrl ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
  const baseFetch = options.fetch ?? globalThis.fetch;
  const retry = options.retry === true ? {} : options.retry || undefined;
  return createFetchClient<paths>({
    baseUrl,
    ...(apiKey
      ? { headers: { authorization: `Bearer ${apiKey}` } }
      : { credentials: "same-origin" }),
    fetch: retry ? retryingFetch(baseFetch, retry, options.sleep) : baseFetch,
  });
}

/** Leads: by folio, in batches, by search, and as CSV (each lead returned is a lead-view). */
function leadCalls(api: Api) {
  return {
    /** One lead (one lead-view, once per parcel per UTC day). */
    get: (folio: string) => unwrap(api.GET("/v1/leads/{folio}", { params: { path: { folio } } })),
    /** Several leads by folio in one call (one lead-view per new folio). */
    batch: (folios: readonly string[]) =>
      unwrap(api.POST("/v1/leads/batch", { body: { folios: [...folios] } })),
    /** Leads matching a search, page by page (one lead-view per lead returned). */
    list: (search: LeadSearch = {}, start?: { cursor?: string }) =>
      new Pages<Lead>(
        (cursor) =>
          page(
            api.GET("/v1/leads", {
              params: { query: queryOf({ ...search, cursor }) as QueryOf<"searchLeads"> },
            }),
            (body) => ({ items: body.leads, nextCursor: body.next_cursor }),
          ),
        start?.cursor,
      ),
    /** The search as CSV text (header row, then a row per lead; one lead-view per row). */
    exportCsv: (search: LeadExport = {}) =>
      unwrap(
        api.GET("/v1/exports/leads.csv", {
          params: { query: queryOf(search) as QueryOf<"exportLeadsCsv"> },
          parseAs: "text",
        }) as Promise<Outcome<string>>,
      ),
  };
}

/** Watchlists, their manual runs, and their matches by polling or as CSV. */
function watchlistCalls(api: Api) {
  return {
    create: (body: WatchlistCreate) => unwrap(api.POST("/v1/watchlists", { body })),
    get: (id: string) => unwrap(api.GET("/v1/watchlists/{id}", { params: { path: { id } } })),
    update: (id: string, body: WatchlistUpdate) =>
      unwrap(api.PATCH("/v1/watchlists/{id}", { params: { path: { id } }, body })),
    delete: (id: string) => unwrap(api.DELETE("/v1/watchlists/{id}", { params: { path: { id } } })),
    list: (query: { limit?: number } = {}) =>
      new Pages<Watchlist>((cursor) =>
        page(
          api.GET("/v1/watchlists", {
            params: { query: { ...query, ...(cursor ? { cursor } : {}) } },
          }),
          (body) => ({ items: body.data, nextCursor: body.next_cursor }),
        ),
      ),
    /** Starts a manual run of the current recipe (its matches are delivered like any other). */
    run: (id: string) => unwrap(api.POST("/v1/watchlists/{id}/run", { params: { path: { id } } })),
    getRun: (id: string, runId: string) =>
      unwrap(
        api.GET("/v1/watchlists/{id}/runs/{run_id}", {
          params: { path: { id, run_id: runId } },
        }),
      ),
    /**
     * Polling: the watchlist's matches since `cursor` (free). The walk ends at the newest match;
     * keep `cursor` afterwards to poll again from there.
     */
    matches: (id: string, query: { cursor?: string; limit?: number } = {}) =>
      new Pages<MatchSummary>(
        (cursor) =>
          page(
            api.GET("/v1/watchlists/{id}/matches", {
              params: {
                path: { id },
                query: {
                  ...(query.limit ? { limit: query.limit } : {}),
                  ...(cursor ? { cursor } : {}),
                },
              },
            }),
            (body) => ({
              items: body.matches,
              nextCursor: body.has_more ? body.next_cursor : null,
              resumeCursor: body.next_cursor,
            }),
          ),
        query.cursor,
      ),
    exportCsv: (id: string, query: { max_rows?: number } = {}) =>
      unwrap(
        api.GET("/v1/watchlists/{id}/export.csv", {
          params: { path: { id }, query: queryOf(query) },
          parseAs: "text",
        }) as Promise<Outcome<string>>,
      ),
  };
}

/** Webhook endpoints of a watchlist, their secrets and their deliveries. */
function webhookCalls(api: Api) {
  return {
    /** Subscribes an HTTPS endpoint; the answer holds its signing secret, shown this once. */
    create: (watchlistId: string, body: { url: string; events?: string[] }) =>
      unwrap(
        api.POST("/v1/watchlists/{id}/webhooks", {
          params: { path: { id: watchlistId } },
          body: { events: ["watchlist.match"], ...body },
        }),
      ),
    list: (watchlistId: string) =>
      unwrap(api.GET("/v1/watchlists/{id}/webhooks", { params: { path: { id: watchlistId } } })),
    get: (watchlistId: string, endpointId: string) =>
      unwrap(
        api.GET("/v1/watchlists/{id}/webhooks/{endpoint_id}", {
          params: { path: { id: watchlistId, endpoint_id: endpointId } },
        }),
      ),
    delete: (watchlistId: string, endpointId: string) =>
      unwrap(
        api.DELETE("/v1/watchlists/{id}/webhooks/{endpoint_id}", {
          params: { path: { id: watchlistId, endpoint_id: endpointId } },
        }),
      ),
    /**
     * A new signing secret (shown once); the old one stops signing at once. Let the receiver
     * accept both secrets before rotating, and drop the old one after (docs/webhooks.md).
     */
    rotate: (watchlistId: string, endpointId: string) =>
      unwrap(
        api.POST("/v1/watchlists/{id}/webhooks/{endpoint_id}:rotate", {
          params: { path: { id: watchlistId, endpoint_id: endpointId } },
        }),
      ),
    deliveries: (
      watchlistId: string,
      endpointId: string,
      query: Omit<QueryOf<"listWebhookDeliveries">, "cursor"> = {},
    ) =>
      new Pages<WebhookDelivery>((cursor) =>
        page(
          api.GET("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries", {
            params: {
              path: { id: watchlistId, endpoint_id: endpointId },
              query: { ...query, ...(cursor ? { cursor } : {}) },
            },
          }),
          (body) => ({ items: body.data, nextCursor: body.next_cursor }),
        ),
      ),
    getDelivery: (watchlistId: string, endpointId: string, deliveryId: string) =>
      unwrap(
        api.GET("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries/{delivery_id}", {
          params: { path: { id: watchlistId, endpoint_id: endpointId, delivery_id: deliveryId } },
        }),
      ),
    replay: (watchlistId: string, endpointId: string, deliveryId: string) =>
      unwrap(
        api.POST("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries/{delivery_id}:replay", {
          params: { path: { id: watchlistId, endpoint_id: endpointId, delivery_id: deliveryId } },
        }),
      ),
  };
}

export function createClient(options: ClientOptions = {}) {
  const api = connect(options);
  return {
    /**
     * The underlying openapi-fetch client: a typed call for every operation of the API. Pass its
     * promise to `unwrap` for the limit headers and typed errors.
     */
    api,
    unwrap,
    leads: leadCalls(api),
    watchlists: watchlistCalls(api),
    webhooks: webhookCalls(api),
    /** This month's lead-view usage (free). */
    usage: () => unwrap(api.GET("/v1/usage")),
    /** The key's tenant, member and tier (free). */
    me: () => unwrap(api.GET("/v1/me")),
  };
}

export type TerminalHouseClient = ReturnType<typeof createClient>;
