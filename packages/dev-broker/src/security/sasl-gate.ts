// One connection's SASL state, as Kafka's SaslServerAuthenticator keeps it: before the handshake
// only ApiVersions and SaslHandshake are admitted, then only SaslAuthenticate until the mechanism
// succeeds; anything else closes the connection.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import {
  isSaslMechanism,
  SaslAuthenticationFailure,
  type SaslMechanism,
  type SaslSession,
  type SaslUserStore,
  startSaslSession,
} from "./sasl.ts";

export interface SaslListenerConfig {
  mechanisms: readonly SaslMechanism[];
  users: SaslUserStore;
}

export interface HandshakeResult {
  errorCode: number;
  mechanisms: readonly string[];
}

export interface AuthenticateResult {
  errorCode: number;
  errorMessage: string | null;
  challenge: Buffer;
  /** Set when this step completed the authentication. */
  principal: string | null;
  /** Internal reason for a failure, for the broker's log. */
  reason?: string;
}

type State = "handshake" | "authenticate" | "complete" | "failed";

export class SaslGate {
  private state: State = "handshake";
  private session: SaslSession | null = null;
  mechanism: SaslMechanism | null = null;

  private readonly config: SaslListenerConfig;

  constructor(config: SaslListenerConfig) {
    this.config = config;
  }

  get authenticated(): boolean {
    return this.state === "complete";
  }

  /** Whether a request with this API key may be processed in the current state. */
  admits(apiKey: number): boolean {
    switch (this.state) {
      case "handshake":
        return apiKey === ApiKey.ApiVersions || apiKey === ApiKey.SaslHandshake;
      case "authenticate":
        return apiKey === ApiKey.SaslAuthenticate;
      case "complete":
        return true;
      case "failed":
        return false;
    }
  }

  handshake(requested: string): HandshakeResult {
    const mechanisms = this.config.mechanisms;
    if (this.state !== "handshake") {
      // Re-authentication (KIP-368) is not offered.
      return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms };
    }
    if (!isSaslMechanism(requested) || !mechanisms.includes(requested)) {
      this.state = "failed";
      return { errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms };
    }
    this.mechanism = requested;
    this.session = startSaslSession(requested, this.config.users);
    this.state = "authenticate";
    return { errorCode: ErrorCode.NONE, mechanisms };
  }

  authenticate(token: Buffer): AuthenticateResult {
    if (this.state !== "authenticate" || this.session === null) {
      return {
        errorCode: ErrorCode.ILLEGAL_SASL_STATE,
        errorMessage: "SaslAuthenticate request not expected at this point",
        challenge: Buffer.alloc(0),
        principal: null,
      };
    }
    try {
      const step = this.session.step(token);
      if (step.principal !== null) {
        this.state = "complete";
        this.session = null;
      }
      return {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        challenge: step.challenge,
        principal: step.principal,
      };
    } catch (error) {
      this.state = "failed";
      this.session = null;
      if (error instanceof SaslAuthenticationFailure) {
        return {
          errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED,
          errorMessage: error.message,
          challenge: Buffer.alloc(0),
          principal: null,
          reason: error.reason,
        };
      }
      throw error;
    }
  }
}
