import { retryAfterSeconds } from "./errors.ts";

export interface RetryOptions {
  /** Further attempts after the first, at most (default 2). */
  maxRetries?: number;
  /** A Retry-After longer than this is not waited for: the 429 is thrown (default 60). */
  maxWaitSeconds?: number;
}

export type Sleep = (ms: number, signal?: AbortSignal | null) => Promise<void>;

const defaultSleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/**
 * A fetch that resends a request refused with 429, after the Retry-After the API gave, a bounded
 * number of times. Only 429 is retried: the limiter refuses before anything runs, so resending
 * even a POST cannot do its work twice; other failures are the caller's to judge.
 */
export function retryingFetch(
  base: typeof fetch,
  options: RetryOptions,
  sleep: Sleep = defaultSleep,
): typeof fetch {
  const maxRetries = options.maxRetries ?? 2;
  const maxWaitSeconds = options.maxWaitSeconds ?? 60;
  return async (input, init) => {
    const request = new Request(input, init);
    for (let attempt = 0; ; attempt++) {
      // A body can be read once; each attempt sends a copy.
      const response = await base(request.clone());
      if (response.status !== 429 || attempt >= maxRetries) {
        return response;
      }
      const wait = retryAfterSeconds(response.headers.get("retry-after"));
      if (wait === null || wait > maxWaitSeconds) {
        return response;
      }
      // The refusal's body is not needed; releasing it frees the connection.
      await response.body?.cancel();
      await sleep(wait * 1000, request.signal);
    }
  };
}
