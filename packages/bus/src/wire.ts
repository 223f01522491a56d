import { connect, type Socket } from "node:net";

/**
 * Kafka's request framing for the bus's own readers and writers: one TCP connection with
 * requests pipelined in order (Kafka answers a connection's requests in the order they came), and
 * a reader of the big-endian fields and varints its answers are made of.
 */

/** A connection failed, was closed, or a request on it got no answer in time; worth retrying. */
export class BrokerConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BrokerConnectionError";
  }
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

  private constructor(socket: Socket, clientId: string) {
    this.#socket = socket;
    this.#clientId = Buffer.from(clientId);
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("error", (error) => this.#fail(new BrokerConnectionError(error.message)));
    socket.on("close", () => this.#fail(new BrokerConnectionError("broker connection closed")));
  }

  static open(host: string, port: number, clientId: string): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, noDelay: true });
      socket.once("connect", () => {
        socket.off("error", onError);
        resolve(new Connection(socket, clientId));
      });
      const onError = (error: Error) =>
        reject(new BrokerConnectionError(`cannot connect to ${host}:${port}: ${error.message}`));
      socket.once("error", onError);
    });
  }

  /** False once the connection failed or was closed; open a new one then. */
  get usable(): boolean {
    return this.#failed === undefined;
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

/** Reads big-endian fields and varints from one buffer. */
export class Reader {
  buffer: Buffer;
  pos: number;

  constructor(buffer: Buffer, pos = 0) {
    this.buffer = buffer;
    this.pos = pos;
  }

  int8() {
    const value = this.buffer.readInt8(this.pos);
    this.pos += 1;
    return value;
  }
  int16() {
    const value = this.buffer.readInt16BE(this.pos);
    this.pos += 2;
    return value;
  }
  int32() {
    const value = this.buffer.readInt32BE(this.pos);
    this.pos += 4;
    return value;
  }
  int64() {
    const value = this.buffer.readBigInt64BE(this.pos);
    this.pos += 8;
    return value;
  }
  string() {
    const length = this.int16();
    const value = this.buffer.toString("utf8", this.pos, this.pos + length);
    this.pos += length;
    return value;
  }
  /** Zig-zag varint; record fields never exceed 2^31 here (varlong timestamps are skipped). */
  varint() {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = this.buffer[this.pos++] as number;
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
  }
  skipVarint() {
    while ((this.buffer[this.pos++] as number) & 0x80) {}
  }
}
