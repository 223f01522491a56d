// Listener security settings, as Kafka names them: the security protocol of the one listener,
// its TLS material (ssl.keystore/truststore, ssl.client.auth) and its SASL mechanisms and users.
import type { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { TlsOptions as NodeTlsOptions, TLSSocket } from "node:tls";
import { isSaslMechanism, SASL_MECHANISMS, type SaslMechanism, SaslUserStore } from "./sasl.ts";
import type { SaslListenerConfig } from "./sasl-gate.ts";

export const SECURITY_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const;
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

export function isSecurityProtocol(value: string): value is SecurityProtocol {
  return (SECURITY_PROTOCOLS as readonly string[]).includes(value);
}

export const CLIENT_AUTH_MODES = ["none", "requested", "required"] as const;
export type ClientAuth = (typeof CLIENT_AUTH_MODES)[number];

export function isClientAuth(value: string): value is ClientAuth {
  return (CLIENT_AUTH_MODES as readonly string[]).includes(value);
}

/** A PEM given inline (a Buffer, or text containing `-----BEGIN`) or as a file path. */
type PemSource = string | Buffer;

export interface TlsListenerOptions {
  /** The server's private key. */
  key: PemSource;
  /** The server's certificate (chain). */
  cert: PemSource;
  /** CA bundle that client certificates must chain to (needed for clientAuth other than none). */
  ca?: PemSource;
  /** Kafka's ssl.client.auth: `required` is mutual TLS. Default `none`. */
  clientAuth?: ClientAuth;
}

export interface SaslListenerOptions {
  /** Enabled mechanisms, in the order SaslHandshake lists them. Default: all three. */
  mechanisms?: readonly SaslMechanism[];
  /** User name to password. */
  users: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
}

export interface ListenerSecurity {
  protocol: SecurityProtocol;
  tls: NodeTlsOptions | null;
  clientAuth: ClientAuth;
  sasl: SaslListenerConfig | null;
}

function readPem(source: PemSource, what: string): Buffer {
  if (Buffer.isBuffer(source)) {
    return source;
  }
  if (source.includes("-----BEGIN")) {
    return Buffer.from(source);
  }
  try {
    return readFileSync(source);
  } catch (error) {
    throw new Error(`cannot read ${what} ${source}: ${(error as NodeJS.ErrnoException).code}`);
  }
}

/** Validates the combination and loads the material; throws with the setting to fix. */
export function resolveListenerSecurity(
  protocol: SecurityProtocol,
  tls: TlsListenerOptions | undefined,
  sasl: SaslListenerOptions | undefined,
): ListenerSecurity {
  const wantsTls = protocol === "SSL" || protocol === "SASL_SSL";
  const wantsSasl = protocol === "SASL_PLAINTEXT" || protocol === "SASL_SSL";
  if (wantsTls && tls === undefined) {
    throw new Error(`security protocol ${protocol} needs a TLS key and certificate`);
  }
  if (!wantsTls && tls !== undefined) {
    throw new Error(`TLS settings given but the security protocol is ${protocol}`);
  }
  if (wantsSasl && sasl === undefined) {
    throw new Error(`security protocol ${protocol} needs SASL users`);
  }
  if (!wantsSasl && sasl !== undefined) {
    throw new Error(`SASL users given but the security protocol is ${protocol}`);
  }
  let nodeTls: NodeTlsOptions | null = null;
  const clientAuth = tls?.clientAuth ?? "none";
  if (tls !== undefined) {
    if (clientAuth !== "none" && tls.ca === undefined) {
      throw new Error(`client authentication "${clientAuth}" needs a CA to verify clients with`);
    }
    nodeTls = {
      key: readPem(tls.key, "TLS key"),
      cert: readPem(tls.cert, "TLS certificate"),
      ...(tls.ca === undefined ? {} : { ca: readPem(tls.ca, "TLS CA") }),
      requestCert: clientAuth !== "none",
      // `requested` accepts clients without a certificate; one that presents a bad certificate
      // is refused after the handshake (see peerPrincipal).
      rejectUnauthorized: clientAuth === "required",
      minVersion: "TLSv1.2",
    };
  }
  let saslConfig: SaslListenerConfig | null = null;
  if (sasl !== undefined) {
    const mechanisms = sasl.mechanisms ?? SASL_MECHANISMS;
    if (mechanisms.length === 0 || mechanisms.some((m) => !isSaslMechanism(m))) {
      throw new Error(`SASL mechanisms must be among ${SASL_MECHANISMS.join(", ")}`);
    }
    const users =
      sasl.users instanceof Map
        ? new Map(sasl.users)
        : new Map(Object.entries(sasl.users as Record<string, string>));
    if (users.size === 0) {
      throw new Error("a SASL listener needs at least one user");
    }
    saslConfig = { mechanisms: [...mechanisms], users: new SaslUserStore(users) };
  }
  return { protocol, tls: nodeTls, clientAuth, sasl: saslConfig };
}

/**
 * The principal of a TLS connection, as Kafka's default SSL principal builder names it: the
 * client certificate's subject in RFC 2253 order (`CN=...,O=...,C=...`), or ANONYMOUS without
 * one. Returns null when a certificate was presented but does not verify (`requested` mode).
 */
export function peerPrincipal(socket: TLSSocket): string | null {
  const peer = socket.getPeerX509Certificate() as X509Certificate | undefined;
  if (peer === undefined) {
    return "User:ANONYMOUS";
  }
  if (!socket.authorized) {
    return null;
  }
  const rdns = peer.subject
    .split("\n")
    .filter((line) => line !== "")
    .reverse()
    .map((rdn) => {
      const eq = rdn.indexOf("=");
      return `${rdn.slice(0, eq)}=${rdn.slice(eq + 1).replace(/([,+"\\<>;])/g, "\\$1")}`;
    });
  return `User:${rdns.join(",")}`;
}
