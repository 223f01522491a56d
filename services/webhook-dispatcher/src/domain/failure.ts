/**
 * The coarse reason a network failure is recorded with (decision 0331). The socket's own message
 * names addresses, ports, certificate names and what a server sent; the delivery log, its events
 * and the tenant see only one of these.
 */
export const NETWORK_REASONS = {
  refused: "connection refused",
  reset: "connection reset",
  unreachable: "host unreachable",
  dns: "host name did not resolve",
  connectTimeout: "connect timed out",
  tls: "tls handshake failed",
  protocol: "invalid http response",
  other: "network error",
} as const;

export type NetworkReason = (typeof NETWORK_REASONS)[keyof typeof NETWORK_REASONS];

/** What an attempt refused at connect time records: never the address the name resolved to. */
export const BLOCKED_AT_CONNECT = "host resolves to an address that is not public";

const BY_CODE: Record<string, NetworkReason> = {
  ECONNREFUSED: NETWORK_REASONS.refused,
  ECONNRESET: NETWORK_REASONS.reset,
  EPIPE: NETWORK_REASONS.reset,
  UND_ERR_SOCKET: NETWORK_REASONS.reset,
  UND_ERR_CLOSED: NETWORK_REASONS.reset,
  EHOSTUNREACH: NETWORK_REASONS.unreachable,
  ENETUNREACH: NETWORK_REASONS.unreachable,
  EHOSTDOWN: NETWORK_REASONS.unreachable,
  ENETDOWN: NETWORK_REASONS.unreachable,
  EADDRNOTAVAIL: NETWORK_REASONS.unreachable,
  ENOTFOUND: NETWORK_REASONS.dns,
  EAI_AGAIN: NETWORK_REASONS.dns,
  EAI_FAIL: NETWORK_REASONS.dns,
  EAI_NODATA: NETWORK_REASONS.dns,
  EAI_NONAME: NETWORK_REASONS.dns,
  ETIMEDOUT: NETWORK_REASONS.connectTimeout,
  UND_ERR_CONNECT_TIMEOUT: NETWORK_REASONS.connectTimeout,
  EPROTO: NETWORK_REASONS.tls,
};

/** TLS and certificate failures: Node's `ERR_TLS_*`, OpenSSL's `ERR_SSL_*` and X.509 codes. */
const TLS_CODE =
  /^(?:ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH|INVALID_CA|PATH_LENGTH_EXCEEDED)/;

function reasonOfCode(code: unknown): NetworkReason | null {
  if (typeof code !== "string") {
    return null;
  }
  if (BY_CODE[code]) {
    return BY_CODE[code];
  }
  if (TLS_CODE.test(code)) {
    return NETWORK_REASONS.tls;
  }
  // llhttp's codes for an answer that is not HTTP.
  if (code.startsWith("HPE_")) {
    return NETWORK_REASONS.protocol;
  }
  return null;
}

/**
 * The coarse reason of a failed request: by its code (or an answer undici could not parse as
 * HTTP), else its cause's, else "network error".
 */
export function networkReasonOf(error: unknown): NetworkReason {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === "object"; depth++) {
    const { code, name, cause } = current as { code?: unknown; name?: unknown; cause?: unknown };
    const reason = name === "HTTPParserError" ? NETWORK_REASONS.protocol : reasonOfCode(code);
    if (reason) {
      return reason;
    }
    current = cause;
  }
  return NETWORK_REASONS.other;
}
