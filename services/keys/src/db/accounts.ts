import { createBilling } from "./billing.ts";
import { createContacts } from "./contacts.ts";
import { createCredentials } from "./credentials.ts";
import { createKeys } from "./keys.ts";
import { createMembers } from "./members.ts";
import { createSessions } from "./sessions.ts";
import { createSubscription } from "./subscription.ts";
import type { AccountsDeps } from "./tenant-rows.ts";
import { createTrials } from "./trials.ts";

export type { AccountsDeps } from "./tenant-rows.ts";

/**
 * The keys service's store, one part per concern: trials, API keys, members, the
 * subscription, sign-in credentials, dashboard sessions, contact messages and the processor's billing events. All parts share one pool and clock.
 */
export function createAccounts(deps: AccountsDeps) {
  return {
    ...createTrials(deps),
    ...createKeys(deps),
    ...createMembers(deps),
    ...createSubscription(deps),
    ...createCredentials(deps),
    ...createSessions(deps),
    ...createContacts(deps),
    ...createBilling(deps),
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
