// A bare TCP Kafka client for protocol-level tests: requests are encoded with kafkajs's own
// encoders (the protocol oracle) or by hand, and response frames are returned raw.
import { createRequire } from "node:module";
import { connect, type Socket } from "node:net";
import { FrameDecoder } from "../protocol/frame-decoder.ts";

export const kafkajsRequire = createRequire(import.meta.url);

interface KafkajsRequest {
  apiKey: number;
  apiVersion: number;
  encode(): Promise<{ buffer: Buffer }>;
}

export interface KafkajsResponseCodec {
  decode(body: Buffer): Promise<unknown>;
  parse(decoded: unknown): Promise<unknown>;
}

export class RawClient {
  private readonly socket: Socket;
  private readonly decoder = new FrameDecoder(256 * 1024 * 1024);
  private readonly frames: Buffer[] = [];
  private waiters: Array<() => void> = [];
  private nextCorrelationId = 1;
  closed = false;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => {
      this.frames.push(...this.decoder.push(chunk));
      this.wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) {
      w();
    }
  }

  static connect(port: number, host = "127.0.0.1"): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host, () => resolve(new RawClient(socket)));
      socket.once("error", reject);
    });
  }

  /** Writes a frame made of a v1 request header and the given body; returns the correlation id. */
  sendRaw(apiKey: number, apiVersion: number, body: Buffer, clientId = "raw-client"): number {
    const correlationId = this.nextCorrelationId++;
    const client = Buffer.from(clientId);
    const header = Buffer.alloc(10 + client.length);
    header.writeInt16BE(apiKey, 0);
    header.writeInt16BE(apiVersion, 2);
    header.writeInt32BE(correlationId, 4);
    header.writeInt16BE(client.length, 8);
    client.copy(header, 10);
    const size = Buffer.alloc(4);
    size.writeInt32BE(header.length + body.length);
    this.socket.write(Buffer.concat([size, header, body]));
    return correlationId;
  }

  writeBytes(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  async send(request: KafkajsRequest): Promise<number> {
    const body = (await request.encode()).buffer;
    return this.sendRaw(request.apiKey, request.apiVersion, body);
  }

  /** Next response frame: correlation id and body. Rejects if the socket closes first. */
  async nextResponse(timeoutMs = 5000): Promise<{ correlationId: number; body: Buffer }> {
    const frame = await this.nextFrame(timeoutMs);
    return { correlationId: frame.readInt32BE(0), body: frame.subarray(4) };
  }

  /** Next frame as is (without its size), e.g. a bare SASL token. */
  async nextFrame(timeoutMs = 5000): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length === 0) {
      if (this.closed) {
        throw new Error("connection closed");
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error("timed out waiting for a response");
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.frames.shift() as Buffer;
  }

  /** Sends a kafkajs request and decodes + parses the answer with the matching kafkajs response. */
  async roundTrip<T>(request: KafkajsRequest, codec: KafkajsResponseCodec): Promise<T> {
    const correlationId = await this.send(request);
    const response = await this.nextResponse();
    if (response.correlationId !== correlationId) {
      throw new Error(`correlation id ${response.correlationId} != ${correlationId}`);
    }
    return (await codec.parse(await codec.decode(response.body))) as T;
  }

  close(): void {
    this.socket.destroy();
  }
}

export function kafkajsProtocol(
  api: string,
  version: number,
): {
  request: (args: unknown) => KafkajsRequest;
  response: KafkajsResponseCodec;
} {
  return {
    request: kafkajsRequire(`kafkajs/src/protocol/requests/${api}/v${version}/request`),
    response: kafkajsRequire(`kafkajs/src/protocol/requests/${api}/v${version}/response`),
  };
}
