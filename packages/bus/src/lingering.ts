import type { TopicContract } from "@th/contracts";
import { injectContext } from "@th/telemetry";
import { PublishAbortedError } from "./producer.ts";
import { encodeHeaders } from "./record-batch.ts";
import { encodeValue, schemaHeaders } from "./serde.ts";

/** Writes the records of one shared produce request; see `Publisher.produceTo`. */
export type ProduceTo = (
  topic: string,
  count: number,
  fill: (add: (key: string, value: Buffer, headers: Buffer) => void) => void,
  signal: AbortSignal,
) => Promise<void>;

export interface LingeringOptions {
  /**
   * How long a publish may wait for others to share its produce request while an earlier request
   * of this publisher is still unanswered. With none unanswered, what the current turn of the
   * event loop published leaves at once; otherwise it leaves when the earlier request is
   * answered, or after `lingerMs`, whichever comes first: under load requests fill up by
   * themselves, and a lone publish never waits. 0 never waits for an earlier request.
   */
  lingerMs: number;
}

export interface LingeringPublishOptions {
  /** Gives this publish up when it fires (the caller no longer wants it). */
  signal?: AbortSignal;
  /** Gives this publish up when the broker has not acknowledged it within this many ms. */
  timeoutMs?: number;
}

/** A publish given up because its time ran out (see `LingeringPublishOptions.timeoutMs`). */
export class PublishTimeoutError extends PublishAbortedError {
  constructor(message: string, sent: boolean) {
    super(message, sent);
    this.name = "PublishTimeoutError";
  }
}

interface Entry {
  keys: string[];
  values: Buffer[];
  headers: Buffer;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /** Absolute deadline (ms), or Infinity. */
  deadline: number;
  state: "queued" | "sent" | "done";
  group: Group | undefined;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** One produce request and the publishes it carries. */
interface Group {
  live: number;
  controller: AbortController;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Publishes of one topic that arrive within a short linger share one produce request: under load
 * many concurrent callers cost the broker and this process one request instead of one each.
 * Each publish still resolves only once the broker acknowledged its records (acks=-1), and each
 * can be given up on its own (its signal, its timeout): one given up before its request left is
 * taken out of it and never sent; one given up while the request is on the wire is answered at
 * once with `sent: true` (the broker may yet append it), and the request goes on for the others,
 * unless every publish in it has been given up, when nothing more of it is sent.
 */
export class LingeringPublisher<T> {
  readonly #contract: TopicContract<T>;
  readonly #produceTo: ProduceTo;
  readonly #lingerMs: number;
  readonly #schema: Record<string, string>;
  readonly #schemaOnly: Buffer;
  #queue: Entry[] = [];
  #scheduled: { cancel(): void } | undefined;
  /** Produce requests sent and not yet answered. */
  #inFlight = 0;

  constructor(contract: TopicContract<T>, produceTo: ProduceTo, options: LingeringOptions) {
    this.#contract = contract;
    this.#produceTo = produceTo;
    this.#lingerMs = options.lingerMs;
    this.#schema = schemaHeaders(contract);
    this.#schemaOnly = encodeHeaders(this.#schema);
  }

  /** Resolves once the broker acknowledged every value; rejects when given up or refused. */
  publish(values: readonly T[], options: LingeringPublishOptions = {}): Promise<void> {
    if (values.length === 0) {
      return Promise.resolve();
    }
    const { signal } = options;
    if (signal?.aborted) {
      return Promise.reject(
        new PublishAbortedError(
          `publish to ${this.#contract.topic} given up before it was sent`,
          false,
        ),
      );
    }
    // Encoded now, so that a value the schema refuses fails its own caller only.
    const keys = values.map((value) => this.#contract.keyOf(value));
    const encoded = values.map((value) => encodeValue(this.#contract, value));
    return new Promise<void>((resolve, reject) => {
      const entry: Entry = {
        keys,
        values: encoded,
        headers: this.#headers(),
        signal,
        onAbort: undefined,
        deadline:
          options.timeoutMs === undefined
            ? Number.POSITIVE_INFINITY
            : Date.now() + options.timeoutMs,
        state: "queued",
        group: undefined,
        resolve,
        reject,
      };
      if (signal) {
        entry.onAbort = () =>
          this.#giveUp(
            entry,
            (sent) => new PublishAbortedError(`publish to ${this.#contract.topic} given up`, sent),
          );
        signal.addEventListener("abort", entry.onAbort, { once: true });
      }
      this.#queue.push(entry);
      this.#schedule();
    });
  }

  /** Sends whatever is queued now, without waiting for the linger. */
  flush(): void {
    this.#scheduled?.cancel();
    this.#scheduled = undefined;
    const entries = this.#queue.filter((entry) => entry.state === "queued");
    this.#queue = [];
    if (entries.length > 0) {
      this.#send(entries);
    }
  }

  /** The trace context's headers with the schema's; one shared section when there is no trace. */
  #headers(): Buffer {
    const headers = injectContext({ ...this.#schema });
    let extra = false;
    for (const name in headers) {
      if (!(name in this.#schema)) {
        extra = true;
        break;
      }
    }
    return extra ? encodeHeaders(headers) : this.#schemaOnly;
  }

  #schedule(): void {
    if (this.#scheduled) {
      return;
    }
    const run = () => this.flush();
    if (this.#lingerMs > 0 && this.#inFlight > 0) {
      const timer = setTimeout(run, this.#lingerMs);
      this.#scheduled = { cancel: () => clearTimeout(timer) };
    } else {
      const immediate = setImmediate(run);
      this.#scheduled = { cancel: () => clearImmediate(immediate) };
    }
  }

  #send(entries: Entry[]): void {
    const group: Group = {
      live: entries.length,
      controller: new AbortController(),
      timer: undefined,
    };
    let count = 0;
    let deadline = Number.POSITIVE_INFINITY;
    for (const entry of entries) {
      entry.state = "sent";
      entry.group = group;
      count += entry.values.length;
      deadline = Math.min(deadline, entry.deadline);
    }
    if (deadline !== Number.POSITIVE_INFINITY) {
      group.timer = setTimeout(() => this.#expire(entries), Math.max(0, deadline - Date.now()));
    }
    this.#inFlight++;
    this.#produceTo(
      this.#contract.topic,
      count,
      (add) => {
        for (const entry of entries) {
          for (let index = 0; index < entry.values.length; index++) {
            add(entry.keys[index] as string, entry.values[index] as Buffer, entry.headers);
          }
        }
      },
      group.controller.signal,
    ).then(
      () => this.#finish(entries, group, undefined),
      (error: unknown) => this.#finish(entries, group, error as Error),
    );
  }

  /** Times out the group's publishes whose deadline has passed; re-arms for the others. */
  #expire(entries: Entry[]): void {
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const entry of entries) {
      if (entry.state !== "sent") {
        continue;
      }
      if (entry.deadline <= now) {
        this.#giveUp(
          entry,
          (sent) =>
            new PublishTimeoutError(
              `publish to ${this.#contract.topic} not acknowledged in time`,
              sent,
            ),
        );
      } else {
        next = Math.min(next, entry.deadline);
      }
    }
    const group = entries[0]?.group;
    if (group && next !== Number.POSITIVE_INFINITY) {
      group.timer = setTimeout(() => this.#expire(entries), Math.max(0, next - now));
    }
  }

  #giveUp(entry: Entry, error: (sent: boolean) => Error): void {
    if (entry.state === "done") {
      return;
    }
    const sent = entry.state === "sent";
    this.#settle(entry);
    entry.reject(error(sent));
    const group = entry.group;
    if (group && group.live === 0) {
      // Nobody waits for the request any more: nothing more of it is sent.
      group.controller.abort();
    }
  }

  #settle(entry: Entry): void {
    if (entry.state === "sent" && entry.group) {
      entry.group.live--;
    }
    entry.state = "done";
    if (entry.signal && entry.onAbort) {
      entry.signal.removeEventListener("abort", entry.onAbort);
    }
  }

  #finish(entries: Entry[], group: Group, error: Error | undefined): void {
    if (group.timer) {
      clearTimeout(group.timer);
    }
    this.#inFlight--;
    if (this.#scheduled && this.#lingerMs > 0) {
      // What waited for this request leaves now.
      this.flush();
    }
    for (const entry of entries) {
      if (entry.state !== "sent") {
        continue;
      }
      this.#settle(entry);
      if (error) {
        entry.reject(error);
      } else {
        entry.resolve();
      }
    }
  }
}
