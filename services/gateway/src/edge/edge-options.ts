// What the edge is built from. Its own module, not authenticate.ts: the parts of the edge each
// take a slice of these options, and authenticate.ts imports those parts, so they must not import
// it back.
import type { KeysClient } from "../clients/keys-client.ts";
import type { EdgeSessions, QuotaReader } from "./edge-context.ts";
import type { EdgeStore } from "./edge-store.ts";

export interface EdgeOptions {
  store: EdgeStore;
  keys: KeysClient;
  /** A key's stored hash under the current pepper (see `rememberingKeyHasher`). */
  hashKey: (key: string) => string;
  /**
   * The peppers before the current one (decision 0345): a key unknown under the current pepper
   * is looked for under each, and one found is re-hashed under the current.
   */
  olderPeppers?: {
    currentVersion: number;
    hashes: (key: string) => readonly { version: number; hash: string }[];
  };
  upgradeUrl: string;
  publicRatePerMinute: number;
  authFailureRatePerMinute: number;
  remainingLeadViews?: QuotaReader;
  sessions?: EdgeSessions;
  now?: () => number;
  /** Counts refusals with 429, by whose window refused: `tenant`, `public` or `auth_failure`. */
  onRateLimited?: (scope: "tenant" | "public" | "auth_failure") => void;
}
