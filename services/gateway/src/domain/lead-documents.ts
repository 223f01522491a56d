/**
 * The gateway's read model of lead documents (decision 0390): the JSON text of leads read lately,
 * by folio, as the parcels service answered them, held in memory within a bound and kept from
 * `parcel.ingested`. Every folio the topic names is dropped as its record arrives, so the next
 * read fetches it afresh; and the model answers only while its tail of the topic has caught up
 * within `maxLagMs`, so a tail that stalls or fails sends every read to the parcels service
 * instead of serving what it can no longer vouch for.
 *
 * A document fetched while its folio changed may be the old one: a fetch takes a ticket first,
 * and a ticket whose folio was named by the topic meanwhile (or that predates a restart of the
 * tail) keeps nothing.
 */
export interface LeadDocumentsOptions {
  /** The most characters of document text held; 0 holds none. */
  maxChars: number;
  /** How long after the tail last caught up the documents are still served. */
  maxLagMs: number;
  now?: () => number;
}

/** A fetch of a document the model lacks, which `fill` may keep. */
export interface FillTicket {
  readonly folio: string;
  readonly epoch: number;
}

interface Filling {
  count: number;
  stale: boolean;
}

interface Held {
  text: string;
  /** Read since it last came up for dropping: it gets a second chance (see `#makeRoom`). */
  read: boolean;
}

export class LeadDocuments {
  readonly #maxChars: number;
  readonly #maxLagMs: number;
  readonly #now: () => number;
  /** Folio to document, oldest first. */
  readonly #documents = new Map<string, Held>();
  #chars = 0;
  /** When the tail last had read everything appended before (ms); 0 while it never has. */
  #caughtUpAt = 0;
  #epoch = 0;
  readonly #filling = new Map<string, Filling>();

  constructor(options: LeadDocumentsOptions) {
    this.#maxChars = options.maxChars;
    this.#maxLagMs = options.maxLagMs;
    this.#now = options.now ?? Date.now;
  }

  /** Whether the documents may be served now: the tail has caught up within the lag allowed. */
  get fresh(): boolean {
    return (
      this.#maxChars > 0 && this.#caughtUpAt > 0 && this.#now() - this.#caughtUpAt <= this.#maxLagMs
    );
  }

  get size(): number {
    return this.#documents.size;
  }

  get chars(): number {
    return this.#chars;
  }

  /** The document of `folio` when held and fresh. */
  get(folio: string): string | undefined {
    if (!this.fresh) {
      return undefined;
    }
    const held = this.#documents.get(folio);
    if (held === undefined) {
      return undefined;
    }
    // Marked, not moved: moving it on every read would rebuild the map's table every few
    // thousand reads, garbage that lives long enough to be promoted.
    held.read = true;
    return held.text;
  }

  /** A ticket to keep the document about to be fetched; undefined when it may not be kept. */
  beginFill(folio: string): FillTicket | undefined {
    if (!this.fresh) {
      return undefined;
    }
    const filling = this.#filling.get(folio);
    if (filling) {
      filling.count++;
    } else {
      this.#filling.set(folio, { count: 1, stale: false });
    }
    return { folio, epoch: this.#epoch };
  }

  /** Keeps the fetched document, unless its folio changed or the tail restarted meanwhile. */
  fill(ticket: FillTicket, text: string): void {
    if (this.#release(ticket) && ticket.epoch === this.#epoch && text.length <= this.#maxChars) {
      this.#drop(ticket.folio);
      this.#documents.set(ticket.folio, { text, read: false });
      this.#chars += text.length;
      this.#makeRoom();
    }
  }

  /** Ends a fetch that keeps nothing (it failed, or found no such lead). */
  abandon(ticket: FillTicket): void {
    this.#release(ticket);
  }

  /** The topic named these folios: what is held of them goes, and fetches under way keep nothing. */
  changed(folios: readonly string[]): void {
    for (const folio of folios) {
      this.#drop(folio);
      const filling = this.#filling.get(folio);
      if (filling) {
        filling.stale = true;
      }
    }
  }

  /** The tail has read every record appended before `at` (ms). */
  caughtUp(at: number): void {
    if (at > this.#caughtUpAt) {
      this.#caughtUpAt = at;
    }
  }

  /** The tail starts over from the topic's end: nothing held can be vouched for any more. */
  restart(): void {
    this.#documents.clear();
    this.#chars = 0;
    this.#caughtUpAt = 0;
    this.#epoch++;
    for (const filling of this.#filling.values()) {
      filling.stale = true;
    }
  }

  /** Ends a ticket; answers whether it may still keep its document. */
  #release(ticket: FillTicket): boolean {
    const filling = this.#filling.get(ticket.folio);
    if (!filling) {
      return false;
    }
    filling.count--;
    if (filling.count <= 0) {
      this.#filling.delete(ticket.folio);
    }
    return !filling.stale;
  }

  #drop(folio: string): void {
    const held = this.#documents.get(folio);
    if (held !== undefined) {
      this.#documents.delete(folio);
      this.#chars -= held.text.length;
    }
  }

  /**
   * Drops documents, oldest first, until the text fits the bound; one read since it last came up
   * is spared once and goes to the end (a second chance: the documents read often stay).
   */
  #makeRoom(): void {
    let spared = 0;
    for (const [folio, held] of this.#documents) {
      if (this.#chars <= this.#maxChars) {
        return;
      }
      this.#documents.delete(folio);
      if (held.read && spared < this.#documents.size) {
        held.read = false;
        this.#documents.set(folio, held);
        spared++;
      } else {
        this.#chars -= held.text.length;
      }
    }
  }
}
