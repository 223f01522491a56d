import type { Limits } from "./limits.ts";

/** A successful call: its body, the six limit headers parsed, and the raw response. */
export interface Result<T> {
  data: T;
  limits: Limits;
  response: Response;
}

/** One page of a cursor-paged list: its items and the cursor of the next page, if any. */
export interface Page<T> {
  items: T[];
  /** The next page's cursor; null when the list has no more now. */
  nextCursor: string | null;
  /**
   * Where to resume later, when the list can grow at its end (polling): kept by `cursor` even
   * after the last page, so the next walk starts after what this one saw.
   */
  resumeCursor?: string;
}

/**
 * A cursor-paged list, fetched one page at a time as it is iterated:
 * `for await (const lead of client.leads.list({ county: 23 }))`. `pages()` walks whole pages
 * (with their limit headers); `limits` and `cursor` tell where the walk stands.
 */
export class Pages<T> implements AsyncIterable<T> {
  readonly #fetchPage: (cursor: string | undefined) => Promise<Result<Page<T>>>;
  #limits: Limits | null = null;
  #cursor: string | undefined;

  constructor(
    fetchPage: (cursor: string | undefined) => Promise<Result<Page<T>>>,
    startCursor?: string,
  ) {
    this.#fetchPage = fetchPage;
    this.#cursor = startCursor;
  }

  /** The limit headers of the last page fetched (null before the first). */
  get limits(): Limits | null {
    return this.#limits;
  }

  /**
   * Where the next page starts (undefined before the first). For a polled list it is, after the
   * walk, where the next poll starts: pass it as `cursor` to see only what arrived since.
   */
  get cursor(): string | undefined {
    return this.#cursor;
  }

  async *pages(): AsyncGenerator<Result<Page<T>>, void, undefined> {
    for (;;) {
      const page = await this.#fetchPage(this.#cursor);
      this.#limits = page.limits;
      const next = page.data.resumeCursor ?? page.data.nextCursor;
      if (next !== null) {
        this.#cursor = next;
      }
      yield page;
      if (page.data.nextCursor === null) {
        return;
      }
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) {
      yield* page.data.items;
    }
  }

  /** Every item, all pages fetched (mind the lead-views a metered list costs). */
  async toArray(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) {
      items.push(item);
    }
    return items;
  }
}
