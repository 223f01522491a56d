import { describe, expect, it } from "vitest";
import { NETWORK_REASONS, networkReasonOf } from "./failure.ts";

const withCode = (code: string, message = `${code}: connect 10.0.4.7:5432`) =>
  Object.assign(new Error(message), { code });

describe("the reason a network failure is recorded with", () => {
  it.each([
    ["ECONNREFUSED", NETWORK_REASONS.refused],
    ["ECONNRESET", NETWORK_REASONS.reset],
    ["UND_ERR_SOCKET", NETWORK_REASONS.reset],
    ["EHOSTUNREACH", NETWORK_REASONS.unreachable],
    ["ENOTFOUND", NETWORK_REASONS.dns],
    ["UND_ERR_CONNECT_TIMEOUT", NETWORK_REASONS.connectTimeout],
    ["ERR_SSL_WRONG_VERSION_NUMBER", NETWORK_REASONS.tls],
    ["ERR_TLS_CERT_ALTNAME_INVALID", NETWORK_REASONS.tls],
    ["DEPTH_ZERO_SELF_SIGNED_CERT", NETWORK_REASONS.tls],
    ["CERT_HAS_EXPIRED", NETWORK_REASONS.tls],
    ["UNABLE_TO_VERIFY_LEAF_SIGNATURE", NETWORK_REASONS.tls],
    ["HPE_INVALID_CONSTANT", NETWORK_REASONS.protocol],
    ["E_SOMETHING_NEW", NETWORK_REASONS.other],
  ])("maps %s to %s, one of a fixed few texts", (code, reason) => {
    expect(networkReasonOf(withCode(code))).toBe(reason);
  });

  it("reads the code of a wrapped cause, and never returns the error's own words", () => {
    const wrapped = Object.assign(new Error("fetch failed"), {
      cause: withCode("ECONNREFUSED"),
    });
    expect(networkReasonOf(wrapped)).toBe(NETWORK_REASONS.refused);
    const parser = Object.assign(new Error("Expected HTTP/, got SSH-2.0-OpenSSH_9.6"), {
      name: "HTTPParserError",
      data: "SSH-2.0-OpenSSH_9.6",
    });
    expect(networkReasonOf(parser)).toBe(NETWORK_REASONS.protocol);
    expect(networkReasonOf(new Error("10.0.4.7 said no"))).toBe(NETWORK_REASONS.other);
    expect(networkReasonOf("a string")).toBe(NETWORK_REASONS.other);
    expect(Object.values(NETWORK_REASONS)).toContain(networkReasonOf(withCode("EPIPE")));
  });
});
