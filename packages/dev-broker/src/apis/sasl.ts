// SaslHandshake v0-v1 and SaslAuthenticate v0-v1, served only on SASL listeners. After a v0
// handshake the tokens follow as bare frames (handled by the connection); after v1 they come in
// SaslAuthenticate requests. librdkafka needs v0 listed to believe the broker speaks SASL at all.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition, ClientConnection } from "./types.ts";

function gateOf(connection: ClientConnection) {
  if (connection.sasl === null) {
    // Not reachable: the SASL APIs are only in a SASL listener's version table.
    throw new Error("SASL request on a listener without SASL");
  }
  return connection.sasl;
}

export const saslHandshakeApi: ApiDefinition = {
  apiKey: ApiKey.SaslHandshake,
  name: "SaslHandshake",
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, header, reader, connection) {
    const mechanism = reader.string();
    const result = gateOf(connection).handshake(mechanism);
    if (result.errorCode === ErrorCode.UNSUPPORTED_SASL_MECHANISM) {
      ctx.logger.info("SASL mechanism refused", { mechanism, clientId: header.clientId });
      connection.closeAfterResponse();
    } else if (result.errorCode === ErrorCode.NONE && header.apiVersion === 0) {
      connection.expectRawSaslTokens();
    }
    return new Writer(64).int16(result.errorCode).array(result.mechanisms, (w, name) => {
      w.string(name);
    });
  },
};

export const saslAuthenticateApi: ApiDefinition = {
  apiKey: ApiKey.SaslAuthenticate,
  name: "SaslAuthenticate",
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, header, reader, connection) {
    const token = reader.bytes();
    const gate = gateOf(connection);
    const result = gate.authenticate(token);
    if (result.principal !== null) {
      connection.authenticatedAs(result.principal);
      ctx.logger.debug("SASL authentication succeeded", {
        principal: result.principal,
        mechanism: gate.mechanism,
      });
    }
    if (result.errorCode === ErrorCode.SASL_AUTHENTICATION_FAILED) {
      ctx.stats.failedAuthentications++;
      ctx.logger.info("SASL authentication failed", {
        mechanism: gate.mechanism,
        reason: result.reason,
        client: connection.clientHost,
      });
      // Kafka sends the failure and then closes the connection.
      connection.closeAfterResponse();
    }
    const w = new Writer(128)
      .int16(result.errorCode)
      .nullableString(result.errorMessage)
      .bytes(result.challenge);
    if (header.apiVersion >= 1) {
      w.int64(0); // session_lifetime_ms: 0, no re-authentication required
    }
    return w;
  },
};
