import { z } from "zod";

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/**
 * How long every HTTP server of a service (its public or internal API and its probes) waits on a
 * client (`baseShape`). A client that sends its headers or body slower than this is cut off, so
 * a few slow sockets cannot hold a server's connections (docs/decisions/0340).
 */
export const httpServerShape = {
  /** The request line and every header must have arrived within this. */
  HTTP_HEADERS_TIMEOUT_MS: positiveInt(10_000),
  /**
   * The whole request, body included, must have arrived within this. It does not bound the
   * answer: a long CSV export streams for as long as it takes.
   */
  HTTP_REQUEST_TIMEOUT_MS: positiveInt(30_000),
  /** A kept-alive connection with no request in flight is closed after this long idle. */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt(5_000),
};

export interface HttpServerSettings {
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_REQUEST_TIMEOUT_MS: number;
}

/** The headers are part of the request, so their bound cannot be the longer one. */
export function httpServerSettingProblems(
  settings: HttpServerSettings,
): { variable: string; reason: string }[] {
  return settings.HTTP_HEADERS_TIMEOUT_MS > settings.HTTP_REQUEST_TIMEOUT_MS
    ? [
        {
          variable: "HTTP_HEADERS_TIMEOUT_MS",
          reason: "must not exceed HTTP_REQUEST_TIMEOUT_MS (the headers are part of the request)",
        },
      ]
    : [];
}
