/**
 * A batch that kept failing is handed over one record at a time up to its end (`isolateBelow`,
 * one past its last offset); what a later fetch brings beyond that is batched again.
 */
export interface IsolationSplit<M> {
  /** The records below the boundary, to be handled alone. */
  readonly lone: readonly M[];
  /** The records at or past the boundary, to be handled as a batch; none when all are below. */
  readonly rest: readonly M[] | undefined;
  /** Whether isolating ends once the lone records are handled. */
  readonly ends: boolean;
}

/** Splits a fetched batch (in offset order) at the isolation boundary. */
export function splitAtIsolation<M extends { readonly offset: string }>(
  messages: readonly M[],
  isolateBelow: bigint,
): IsolationSplit<M> {
  const split = messages.findIndex((message) => BigInt(message.offset) >= isolateBelow);
  const lone = split === -1 ? messages : messages.slice(0, split);
  const lastAlone = lone[lone.length - 1];
  return {
    lone,
    rest: split === -1 ? undefined : messages.slice(split),
    ends:
      split !== -1 || (lastAlone !== undefined && BigInt(lastAlone.offset) + 1n >= isolateBelow),
  };
}
