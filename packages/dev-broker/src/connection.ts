// One client socket: frame decoding, request dispatch and strictly ordered responses. Handlers may
// complete out of order (a parked Fetch or JoinGroup), but responses are written in request order,
// as Kafka guarantees per connection. An acks=0 Produce occupies a slot that writes nothing.
import type { Socket } from "node:net";
import { encodeApiVersions } from "./apis/api-versions.ts";
import { API_BY_KEY, SUPPORTED_APIS } from "./apis/index.ts";
import type { BrokerContext, ClientConnection, RequestHeader } from "./apis/types.ts";
import { ApiKey } from "./protocol/api-keys.ts";
import { ErrorCode } from "./protocol/errors.ts";
import { FrameDecoder } from "./protocol/frame-decoder.ts";
import { Reader } from "./protocol/reader.ts";
import { Writer } from "./protocol/writer.ts";

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

export class Connection implements ClientConnection {
  readonly clientHost: string;
  closed = false;
  private readonly socket: Socket;
  private readonly ctx: BrokerContext;
  private readonly stats: ConnectionStats;
  private readonly decoder: FrameDecoder;
  private readonly slots: ResponseSlot[] = [];
  private readonly closeCallbacks = new Set<() => void>();

  constructor(socket: Socket, ctx: BrokerContext, stats: ConnectionStats, maxFrameBytes: number) {
    this.socket = socket;
    this.ctx = ctx;
    this.stats = stats;
    this.clientHost = `/${socket.remoteAddress ?? "unknown"}`;
    this.decoder = new FrameDecoder(maxFrameBytes);
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

  private onClosed(): void {
    this.closed = true;
    for (const callback of [...this.closeCallbacks]) {
      callback();
    }
    this.closeCallbacks.clear();
  }

  private onData(chunk: Buffer): void {
    this.stats.bytesIn += chunk.length;
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
    const slot: ResponseSlot = { ready: false, correlationId: header.correlationId, body: null };
    this.slots.push(slot);

    const api = API_BY_KEY.get(header.apiKey);
    if (
      api === undefined ||
      header.apiVersion < api.minVersion ||
      header.apiVersion > api.maxVersion
    ) {
      this.fill(slot, this.unsupported(header));
      return;
    }
    let result: ReturnType<typeof api.handle>;
    try {
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
   * ApiVersions gets error 35 in the v0 layout plus the supported ranges so the client can retry.
   * Other unknown APIs or versions get a response carrying only error_code 35 rather than a closed
   * socket, so tools see UNSUPPORTED_VERSION instead of a connection reset.
   */
  private unsupported(header: RequestHeader): Writer {
    const fields = {
      apiKey: header.apiKey,
      apiVersion: header.apiVersion,
      clientId: header.clientId,
    };
    if (header.apiKey === ApiKey.ApiVersions) {
      // Routine: librdkafka opens with ApiVersions v3 and retries at our maximum.
      this.ctx.logger.debug("ApiVersions version downgrade", fields);
      return encodeApiVersions(SUPPORTED_APIS, ErrorCode.UNSUPPORTED_VERSION, 0);
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
  }
}
