import { connect, isIP, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { Reader } from "./reader.ts";
import { authenticate, type SaslSettings } from "./sasl.ts";
import { KafkaSecurityError } from "./security-error.ts";

/**
 * Kafka's request framing for the bus's own readers and writers: one TCP connection with
 * requests pipelined in order (Kafka answers a connection's requests in the order they came).
 * The reader of its answers' fields and the security error live in modules of their own, which
 * the SASL exchange imports too, so this module depends on that exchange and not the reverse.
 */

export { KafkaSecurityError, Reader };

/** A connection failed, was closed, or a request on it got no answer in time; worth retrying. */
export class BrokerConnectionError extends Error {
  /** The broker accepted the connection (and TLS) but then closed it or did not answer. */
  readonly afterConnect: boolean;

  constructor(message: string, afterConnect = false) {
    super(message);
    this.name = "BrokerConnectionError";
    this.afterConnect = afterConnect;
  }
}

/** TLS and SASL of a connection; both absent means plaintext without authentication. */
export interface ConnectionSecurity {
  tls?: {
    ca?: Buffer;
    cert?: Buffer;
    key?: Buffer;
    servername?: string;
  };
  sasl?: SaslSettings;
}

/** TLS failures that say our settings and the broker's certificates disagree. */
const UNTRUSTED = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
]);

/** Turns a TLS failure into the setting it is about, or undefined when it is not one of ours. */
function tlsFailure(error: NodeJS.ErrnoException, where: string): KafkaSecurityError | undefined {
  const code = error.code ?? "";
  if (UNTRUSTED.has(code)) {
    return new KafkaSecurityError(
      "KAFKA_TLS_CA_FILE",
      `the certificate of ${where} is not trusted (${code})`,
    );
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return new KafkaSecurityError(
      "KAFKA_TLS_SERVERNAME",
      `the certificate of ${where} is not issued for the name expected (${code})`,
    );
  }
  if (
    /ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|HANDSHAKE_FAILURE)|ALERT_ACCESS_DENIED/.test(
      code,
    )
  ) {
    return new KafkaSecurityError(
      "KAFKA_TLS_CERT_FILE",
      `${where} refused the TLS handshake: it wants a client certificate it trusts (${code})`,
    );
  }
  if (
    /WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|RECORD_LAYER_FAILURE|UNKNOWN_PROTOCOL/.test(code)
  ) {
    return new KafkaSecurityError(
      "KAFKA_TLS",
      `${where} does not answer TLS (${code}); is it a plaintext listener?`,
    );
  }
  return undefined;
}

interface Waiter {
  resolve: (body: Buffer) => void;
  reject: (error: Error) => void;
  /** When the answer is overdue (ms since the epoch); 0 for none. */
  deadline: number;
}

export class Connection {
  readonly #socket: Socket;
  readonly #clientId: Buffer;
  #buffered: Buffer[] = [];
  #bufferedBytes = 0;
  #correlation = 0;
  #waiting: Waiter[] = [];
  #failed: Error | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  /** When the broker will end the authenticated session (ms since the epoch); 0 for never. */
  #expiresAt = 0;

  private constructor(socket: Socket, clientId: string, where: string) {
    this.#socket = socket;
    this.#clientId = Buffer.from(clientId);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    // With TLS 1.3 the broker judges a client certificate after the handshake, so a refusal can
    // arrive as the first read fails.
    socket.on("error", (error) =>
      this.#fail(tlsFailure(error, where) ?? new BrokerConnectionError(error.message)),
    );
    socket.on("close", () => this.#fail(new BrokerConnectionError("broker connection closed")));
  }

  /**
   * Connects, with TLS and then SASL when `security` asks for them. Fails with a
   * `KafkaSecurityError` for what a retry cannot mend, a `BrokerConnectionError` otherwise.
   */
  static async open(
    host: string,
    port: number,
    clientId: string,
    security: ConnectionSecurity = {},
    timeoutMs = 10_000,
  ): Promise<Connection> {
    const where = `${host}:${port}`;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const { tls } = security;
      const socket: Socket = tls
        ? connectTls({
            host,
            port,
            ...(tls.ca ? { ca: tls.ca } : {}),
            ...(tls.cert ? { cert: tls.cert } : {}),
            ...(tls.key ? { key: tls.key } : {}),
            // Node checks the certificate against `servername` when given, else the host; SNI
            // takes no IP address.
            ...((tls.servername ?? (isIP(host) ? undefined : host))
              ? { servername: tls.servername ?? host }
              : {}),
          })
        : connect({ host, port });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new BrokerConnectionError(`cannot connect to ${where}: no answer in ${timeoutMs} ms`),
        );
      }, timeoutMs);
      let tcpConnected = false;
      socket.once("connect", () => {
        tcpConnected = true;
      });
      const onError = (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        const refused =
          tlsFailure(error, where) ??
          // Accepted, then dropped during the handshake: a plaintext listener reads the
          // ClientHello as an absurd request size and closes, as Kafka does.
          (tls && tcpConnected
            ? new KafkaSecurityError(
                "KAFKA_TLS",
                `${where} closed the connection during the TLS handshake; is it a plaintext listener?`,
              )
            : undefined);
        reject(
          refused ?? new BrokerConnectionError(`cannot connect to ${where}: ${error.message}`),
        );
      };
      socket.once("error", onError);
      socket.once(tls ? "secureConnect" : "connect", () => {
        clearTimeout(timer);
        socket.off("error", onError);
        resolve(socket);
      });
    });
    const connection = new Connection(socket, clientId, where);
    if (security.sasl) {
      try {
        const lifetimeMs = await authenticate(connection, security.sasl, where, timeoutMs);
        if (lifetimeMs > 0) {
          // Re-authenticate by reconnecting a little before the broker would cut the session.
          connection.#expiresAt = Date.now() + Math.floor(lifetimeMs * 0.9);
        }
      } catch (error) {
        connection.close();
        if (error instanceof BrokerConnectionError) {
          throw new BrokerConnectionError(
            `${where} closed the connection during the SASL handshake (${error.message})`,
            true,
          );
        }
        throw error;
      }
    }
    return connection;
  }

  /** False once the connection failed, was closed or its session is ending; open a new one. */
  get usable(): boolean {
    return this.#failed === undefined && (this.#expiresAt === 0 || Date.now() < this.#expiresAt);
  }

  /**
   * Sends one request whose body is `parts` in order (written without joining them); resolves
   * with the answer's body (after the correlation id). With `timeoutMs`, an answer that has not
   * come by then fails the connection and every request waiting on it: later answers would be
   * matched to the wrong requests otherwise.
   */
  request(
    apiKey: number,
    apiVersion: number,
    parts: readonly Buffer[],
    timeoutMs = 0,
  ): Promise<Buffer> {
    if (this.#failed) {
      return Promise.reject(this.#failed);
    }
    const client = this.#clientId;
    let bodyLength = 0;
    for (const part of parts) {
      bodyLength += part.length;
    }
    const header = Buffer.allocUnsafe(14 + client.length);
    header.writeInt32BE(10 + client.length + bodyLength, 0);
    header.writeInt16BE(apiKey, 4);
    header.writeInt16BE(apiVersion, 6);
    header.writeInt32BE(++this.#correlation, 8);
    header.writeInt16BE(client.length, 12);
    client.copy(header, 14);
    this.#socket.cork();
    this.#socket.write(header);
    for (const part of parts) {
      this.#socket.write(part);
    }
    this.#socket.uncork();
    return new Promise((resolve, reject) => {
      this.#waiting.push({
        resolve,
        reject,
        deadline: timeoutMs > 0 ? Date.now() + timeoutMs : 0,
      });
      if (timeoutMs > 0) {
        this.#watch();
      }
    });
  }

  close() {
    this.#fail(new BrokerConnectionError("broker connection closed"));
  }

  /** One timer per connection checks the oldest deadline, instead of a timer per request. */
  #watch() {
    if (this.#watchdog) {
      return;
    }
    this.#watchdog = setInterval(() => {
      const now = Date.now();
      if (this.#waiting.some((waiter) => waiter.deadline > 0 && waiter.deadline <= now)) {
        this.#fail(new BrokerConnectionError("broker did not answer in time"));
      } else if (this.#waiting.length === 0) {
        clearInterval(this.#watchdog);
        this.#watchdog = undefined;
      }
    }, 250);
    this.#watchdog.unref();
  }

  #fail(error: Error) {
    if (!this.#failed) {
      this.#failed = error;
      this.#socket.destroy();
    }
    if (this.#watchdog) {
      clearInterval(this.#watchdog);
      this.#watchdog = undefined;
    }
    for (const waiter of this.#waiting.splice(0)) {
      waiter.reject(this.#failed);
    }
  }

  #onData(chunk: Buffer) {
    this.#buffered.push(chunk);
    this.#bufferedBytes += chunk.length;
    for (;;) {
      if (this.#bufferedBytes < 4) {
        return;
      }
      const head = this.#buffered[0] as Buffer;
      const size =
        head.length >= 4 ? head.readInt32BE(0) : Buffer.concat(this.#buffered).readInt32BE(0);
      if (this.#bufferedBytes < 4 + size) {
        return;
      }
      // Join the chunks once per response, never per chunk.
      const all =
        this.#buffered.length === 1 ? head : Buffer.concat(this.#buffered, this.#bufferedBytes);
      const response = all.subarray(8, 4 + size);
      const rest = all.subarray(4 + size);
      this.#buffered = rest.length > 0 ? [rest] : [];
      this.#bufferedBytes = rest.length;
      this.#waiting.shift()?.resolve(response);
    }
  }
}
