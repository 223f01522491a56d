import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { EdgeOptions } from "./edge-options.ts";
import { rateLimited } from "./rate-limit.ts";

/** The edge's per-client-IP answers: refusing a credential, and the public endpoints' limit. */
export interface ClientLimits {
  /** Refuses the request with 401, or with 429 once the client has failed too often. */
  refuse(request: FastifyRequest, detail: string): Promise<never>;
  /** Counts a public call in the client's window; throws 429 when the window is full. */
  admitPublic(request: FastifyRequest): Promise<void>;
}

type LimitOptions = Pick<
  EdgeOptions,
  "store" | "publicRatePerMinute" | "authFailureRatePerMinute" | "onRateLimited"
>;

export function createClientLimits(options: LimitOptions, now: () => number): ClientLimits {
  return {
    async refuse(request, detail) {
      // Failed authentication is limited per client IP so keys cannot be guessed at speed.
      const window = await options.store.limitIp(
        "authfail",
        request.ip,
        options.authFailureRatePerMinute,
        now(),
      );
      request.edge = { window };
      if (!window.allowed) {
        options.onRateLimited?.("auth_failure");
        throw rateLimited(window, now(), "this client");
      }
      throw new ApiError("unauthorized", detail);
    },

    async admitPublic(request) {
      if (request.routeOptions.config?.edge?.ownCredential) {
        return;
      }
      const window = await options.store.limitIp(
        "public",
        request.ip,
        options.publicRatePerMinute,
        now(),
      );
      request.edge = { window };
      if (!window.allowed) {
        options.onRateLimited?.("public");
        throw rateLimited(window, now(), "this client");
      }
    },
  };
}
