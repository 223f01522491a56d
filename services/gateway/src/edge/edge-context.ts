import type { Surface } from "@th/billing";
import type { TenantChanged, Tier } from "@th/contracts";
import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { RateWindow } from "./edge-store.ts";

/** What a route tells the edge about itself. */
export interface EdgeRouteConfig {
  /** No key needed; an Authorization header is ignored; a per-IP limit applies. */
  public?: boolean;
  /**
   * With `public`: the route checks a credential of its own (the dashboard's refresh and sign-out
   * carry the session's refresh token), so the public per-IP limit does not apply and cannot
   * starve it; the route counts its refusals in the client's failed-authentication window.
   */
  ownCredential?: boolean;
  /** The surface a tier must open; `rest` when not said. */
  surface?: Surface;
  /**
   * The route's answers cost lead-views: a dashboard session must show that its own page sent
   * the request, a GET included (edge/csrf.ts).
   */
  leadViews?: boolean;
  /**
   * The route belongs to the dashboard: a signed-in session may call it, an API key may not (the
   * dashboard's key page, open on every tier, is no way around the management API's tier gate).
   */
  sessionOnly?: boolean;
}

declare module "fastify" {
  interface FastifyContextConfig {
    edge?: EdgeRouteConfig;
  }
  interface FastifyRequest {
    edge?: EdgeContext;
    /** The six limit headers for this request, for routes that write the raw response. */
    limitHeaders(): Promise<Record<string, string>>;
  }
}

export interface Tenancy {
  tenantId: string;
  memberId: string;
  /** The API key's id; for a dashboard session, the session's id. */
  keyId: string;
  tier: Tier;
  /** Set when the caller is a signed-in dashboard member rather than an API key. */
  sessionId?: string;
  /** Set when the tenant's payment failed past its grace period: its paid reads are refused. */
  suspended?: boolean;
}

/** What a valid dashboard access token says. */
export interface SessionClaims {
  tenantId: string;
  memberId: string;
  sessionId: string;
  /** The CSRF token bound to the session; state-changing calls echo it in X-CSRF-Token. */
  csrf: string;
  /** The member's session epoch the token was issued at; a password change raises it. */
  epoch: number;
}

/** The dashboard's second way in: a signed session cookie instead of a key. */
export interface EdgeSessions {
  /** The access token's claims; null without a session cookie; "invalid" when it fails to verify. */
  read(request: FastifyRequest): SessionClaims | null | "invalid";
  /** On a tenant-cache miss: the tenant's snapshot, or null when the member may not sign in. */
  tenantOf(memberId: string, requestId: string): Promise<TenantChanged | null>;
}

export interface QuotaState {
  limit: number;
  /** Known after a reservation; otherwise read once, when the headers are written. */
  remaining?: number;
  periodStart: Date;
  /** The next billing anniversary, when the month's lead-views reset. */
  resetsAt: Date;
  /**
   * When the edge admitted the request (ms): its reads are metered as of then, so the UTC day
   * and the billing period of a charge always agree, even for a request that crosses midnight.
   */
  admittedAt: number;
}

/** What the edge learned about a request: who sent it, its rolling minute and its month's quota. */
export interface EdgeContext {
  tenancy?: Tenancy;
  window?: RateWindow;
  quota?: QuotaState;
}

/** The month's lead-view state; until metering exists the whole cap remains. */
export type QuotaReader = (
  tenancy: Tenancy,
  cap: number,
  period: { start: Date; end: Date },
) => Promise<number>;

/** The tenancy of an authenticated request; routes behind the edge can rely on it. */
export function tenancyOf(request: FastifyRequest): Tenancy {
  const tenancy = request.edge?.tenancy;
  if (!tenancy) {
    throw new ApiError("unauthorized", "authentication required");
  }
  return tenancy;
}
