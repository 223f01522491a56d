// One client socket: frame decoding, request dispatch and strictly ordered responses. Handlers may
// complete out of order (a parked Fetch or JoinGroup), but responses are written in request order,
// as Kafka guarantees per connection. An acks=0 Produce occupies a slot that writes nothing.
import type { Socket } from "node:net";
import { encodeUnsupportedApiVersions } from "./apis/api-versions.ts";
import { API_BY_KEY } from "./apis/index.ts";
import type { BrokerContext, ClientConnection, RequestHeader } from "./apis/types.ts";
import { ApiKey } from "./protocol/api-keys.ts";
import { ErrorCode } from "./protocol/errors.ts";
import { FrameDecoder } from "./protocol/frame-decoder.ts";
import { Reader } from "./protocol/reader.ts";
import { Writer } from "./protocol/writer.ts";
import type { SaslGate } from "./security/sasl-gate.ts";

interface ResponseSlot {
  ready: boolean;
  correlationId: number;
  body: Buffer | null;
}

export interface ConnectionStats {
  requestsByApiVersion: Record<string, number>;
  bytesIn: number;
  bytesOut: number;
}

/**
 * Kafka's sasl.server.max.receive.size: the largest frame accepted before authentication, so an
 * unauthenticated client cannot make the broker buffer the full request limit.
 */
const UNAUTHENTICATED_MAX_FRAME_BYTES = 512 * 1024;

/** Who is on the other end before any request: the TLS client certificate or anonymous. */
export interface ConnectionSecurity {
  principal: string;
  sasl: SaslGate | null;
}

export class Connection implements ClientConnection {
  readonly clientHost: string;
  readonly sasl: SaslGate | null;
  principal: string;
  closed = false;
  /** Set after a failed authentication: answer what is queued, then close; read nothing more. */
  private closing = false;
  /** After a SaslHandshake v0, frames are bare SASL tokens until authentication completes. */
  private rawSaslTokens = false;
  private readonly socket: Socket;
  private readonly ctx: BrokerContext;
  private readonly stats: ConnectionStats;
  private readonly decoder: FrameDecoder;
  private readonly slots: ResponseSlot[] = [];
  private readonly closeCallbacks = new Set<() => void>();
  private readonly maxFrameBytes: number;

  constructor(
    socket: Socket,
    ctx: BrokerContext,
    stats: ConnectionStats,
    maxFrameBytes: number,
    security: ConnectionSecurity = { principal: "User:ANONYMOUS", sasl: null },
  ) {
    this.socket = socket;
    this.principal = security.principal;
    this.sasl = security.sasl;
    this.ctx = ctx;
    this.stats = stats;
    this.clientHost = `/${socket.remoteAddress ?? "unknown"}`;
    this.maxFrameBytes = maxFrameBytes;
    this.decoder = new FrameDecoder(
      security.sasl === null
        ? maxFrameBytes
        : Math.min(maxFrameBytes, UNAUTHENTICATED_MAX_FRAME_BYTES),
    );
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (error) => ctx.logger.debug("socket error", { error: error.message }));
    socket.on("close", () => this.onClosed());
  }

  onClose(callback: () => void): () => void {
    this.closeCallbacks.add(callback);
    return () => this.closeCallbacks.delete(callback);
  }

  destroy(): void {
    this.socket.destroy();
  }

  authenticatedAs(principal: string): void {
    this.principal = principal;
    this.decoder.setLimit(this.maxFrameBytes);
  }

  closeAfterResponse(): void {
    this.closing = true;
  }

  expectRawSaslTokens(): void {
    this.rawSaslTokens = true;
  }

  /**
   * The pre-KIP-152 exchange: each frame is a SASL token and each answer a size-prefixed token,
   * without Kafka headers. A failure closes the connection, which is all Kafka tells such clients.
   */
  private onRawSaslToken(token: Buffer): void {
    const gate = this.sasl as SaslGate;
    const result = gate.authenticate(token);
    if (result.errorCode !== ErrorCode.NONE) {
      this.ctx.stats.failedAuthentications++;
      this.ctx.logger.info("SASL authentication failed", {
        mechanism: gate.mechanism,
        reason: result.reason,
        client: this.clientHost,
      });
      this.closing = true;
      this.socket.destroy();
      return;
    }
    if (result.principal !== null) {
      this.authenticatedAs(result.principal);
      this.rawSaslTokens = false;
    }
    const size = Buffer.allocUnsafe(4);
    size.writeInt32BE(result.challenge.length, 0);
    this.socket.write(size);
    this.socket.write(result.challenge);
    this.stats.bytesOut += 4 + result.challenge.length;
  }

  private onClosed(): void {
    this.closed = true;
    for (const callback of [...this.closeCallbacks]) {
      callback();
    }
    this.closeCallbacks.clear();
  }

  private onData(chunk: Buffer): void {
    this.stats.bytesIn += chunk.length;
    if (this.closing) {
      return;
    }
    let frames: Buffer[];
    try {
      frames = this.decoder.push(chunk);
    } catch (error) {
      this.ctx.logger.warn("closing connection", { reason: (error as Error).message });
      this.socket.destroy();
      return;
    }
    this.socket.cork();
    for (const frame of frames) {
      if (this.closing || this.closed) {
        break;
      }
      if (this.rawSaslTokens) {
        this.onRawSaslToken(frame);
        continue;
      }
      this.onFrame(frame);
    }
    this.socket.uncork();
  }

  private onFrame(frame: Buffer): void {
    const reader = new Reader(frame);
    let header: RequestHeader;
    try {
      header = {
        apiKey: reader.int16(),
        apiVersion: reader.int16(),
        correlationId: reader.int32(),
        clientId: reader.nullableString() ?? "",
      };
    } catch {
      this.ctx.logger.warn("closing connection: malformed request header");
      this.socket.destroy();
      return;
    }
    const key = `${header.apiKey}v${header.apiVersion}`;
    this.stats.requestsByApiVersion[key] = (this.stats.requestsByApiVersion[key] ?? 0) + 1;
    this.ctx.onRequest?.({
      apiKey: header.apiKey,
      apiVersion: header.apiVersion,
      clientId: header.clientId,
      principal: this.principal,
    });
    if (this.sasl !== null && !this.sasl.admits(header.apiKey)) {
      // Kafka's SaslServerAuthenticator treats any other request before authentication as an
      // illegal SASL state and closes the connection without an answer.
      this.ctx.logger.warn("closing connection: request not allowed before SASL authentication", {
        apiKey: header.apiKey,
        clientId: header.clientId,
        client: this.clientHost,
      });
      this.closing = true;
      this.socket.destroy();
      return;
    }
    const slot: ResponseSlot = { ready: false, correlationId: header.correlationId, body: null };
    this.slots.push(slot);

    const range = this.ctx.versions.get(header.apiKey);
    const api = API_BY_KEY.get(header.apiKey);
    if (
      api === undefined ||
      range === undefined ||
      header.apiVersion < range.minVersion ||
      header.apiVersion > range.maxVersion
    ) {
      this.fill(slot, this.unsupported(header));
      return;
    }
    let result: ReturnType<typeof api.handle>;
    try {
      if (api.firstFlexibleVersion !== undefined && header.apiVersion >= api.firstFlexibleVersion) {
        reader.skipTaggedFields();
      }
      result = api.handle(this.ctx, header, reader, this);
    } catch (error) {
      this.failRequest(header, error);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (body) => this.fill(slot, body),
        (error: unknown) => this.failRequest(header, error),
      );
    } else {
      this.fill(slot, result);
    }
  }

  /**
   * ApiVersions above our maximum gets error 35 in the v0 layout with ApiVersions' own range, as
   * Kafka answers it (KIP-511), so the client can retry at a version we speak. Other unknown APIs
   * or versions get a response carrying only error_code 35 rather than a closed socket, so tools
   * see UNSUPPORTED_VERSION instead of a connection reset.
   */
  private unsupported(header: RequestHeader): Writer {
    const fields = {
      apiKey: header.apiKey,
      apiVersion: header.apiVersion,
      clientId: header.clientId,
    };
    if (header.apiKey === ApiKey.ApiVersions) {
      // Routine: a client newer than this broker opens above our maximum and retries lower.
      this.ctx.logger.debug("ApiVersions version downgrade", fields);
      return encodeUnsupportedApiVersions(this.ctx.versions);
    }
    this.ctx.logger.info("unsupported request", fields);
    return new Writer(8).int16(ErrorCode.UNSUPPORTED_VERSION);
  }

  private failRequest(header: RequestHeader, error: unknown): void {
    // A request we cannot decode leaves the stream state unknown; Kafka closes the connection too.
    this.ctx.logger.warn("closing connection after failed request", {
      apiKey: header.apiKey,
      apiVersion: header.apiVersion,
      error: error instanceof Error ? error.message : String(error),
    });
    this.socket.destroy();
  }

  private fill(slot: ResponseSlot, body: Writer | null): void {
    slot.ready = true;
    slot.body = body === null ? null : body.toBuffer();
    this.flush();
  }

  private flush(): void {
    if (this.closed) {
      this.slots.length = 0;
      return;
    }
    let wrote = false;
    while (this.slots.length > 0 && (this.slots[0] as ResponseSlot).ready) {
      const slot = this.slots.shift() as ResponseSlot;
      if (slot.body === null) {
        continue;
      }
      if (!wrote) {
        this.socket.cork();
        wrote = true;
      }
      const head = Buffer.allocUnsafe(8);
      head.writeInt32BE(slot.body.length + 4, 0);
      head.writeInt32BE(slot.correlationId, 4);
      this.socket.write(head);
      this.socket.write(slot.body);
      this.stats.bytesOut += 8 + slot.body.length;
    }
    if (wrote) {
      this.socket.uncork();
    }
    if (this.closing && this.slots.length === 0) {
      // end() sends what was written, then FIN: the client reads the error before the close.
      this.socket.end();
    }
  }
}
