import { METER_BATCH_COMMAND } from "@th/quota";
import type { Redis } from "ioredis";
import {
  AUTHORIZE_BATCH_LUA,
  AUTHORIZE_SESSION_LUA,
  type AuthorizationRedis,
  batchedKeyAuthorization,
  sessionAuthorization,
} from "./store/authorization.ts";
import { dailyCalendar } from "./store/calendar.ts";
import { cachedRecords, PUT_KEY_LUA, PUT_TENANT_LUA, type RecordRedis } from "./store/records.ts";
import { IP_LIMIT_LUA, type IpLimitRedis, ipLimits } from "./store/rolling-minute.ts";
import { sessionMarks } from "./store/session-marks.ts";
import {
  SIGN_IN_ATTEMPT_LUA,
  type SignInBackoffRedis,
  signInBackoff,
} from "./store/sign-in-backoff.ts";
import { TRIAL_SLOT_LUA, type TrialSlotRedis, trialStarts } from "./store/trial-starts.ts";

export type { Authorization } from "./store/authorization.ts";
export type { RateWindow } from "./store/rolling-minute.ts";

/**
 * The gateway's hot state in Redis, shared by every gateway instance. Each fact here can be
 * rebuilt: key records and tenant records from the keys service (or its events), rate windows
 * simply restart. Layout, under the `th:` prefix:
 * - `key:<hash>`     hash {tenant_id, member_id, key_id, revoked} or {unknown: 1} for 60 s
 * - `tenant:<id>`    hash {tier, status, rate_per_minute, lead_views_per_month, billing_anniversary, revision}, TTL
 * - `rlt:<tenant>` + `rlc:<tenant>` the tenant's rolling minute: a sorted set with one member
 *   per millisecond that saw requests, and a hash of running figures (see SLIDE_LUA in
 *   store/rolling-minute.ts)
 * - `rlipt:<scope>:<ip>` + `rlipc:<scope>:<ip>` the same per client IP for public calls and
 *   failed authentication
 * - `session:<id>`   a signed-out dashboard session, until its tokens would have expired
 * - `member-sessions-ended:<member id>`  a removed member, until their access tokens expire
 * - `member-epoch:<member id>`  the member's session epoch after a password change or reset:
 *   access tokens of an earlier epoch are refused, until they would have expired
 * - `signin:<sha-256 of the email>`  hash {n, until}: an account's failed sign-ins and lock
 * - `trials:ip:<ip>`, `trials:domain:<domain>`  sorted sets of trial starts (store/trial-starts.ts)
 *
 * The scripts live with their concern under store/: the rolling minute, the authorization of a
 * key or session, and the cached records.
 */

/**
 * Options for the edge's own Redis connection: auto-pipelining for the calls requests make one by
 * one, but not for the batches (key checks, lead-view reservations), each already one call per
 * turn of the event loop: they are written as soon as they are flushed instead of waiting another
 * turn, and cost no pipeline object each (ioredis copies every script onto one).
 */
export const EDGE_REDIS_OPTIONS = {
  enableAutoPipelining: true,
  autoPipeliningIgnoredCommands: ["thAuthorizeBatch", METER_BATCH_COMMAND],
};

export interface EdgeStoreOptions {
  tenantTtlSeconds: number;
  /** Called with the number of key authorizations each script call judged. */
  onAuthorizeBatch?: (size: number) => void;
}

type EdgeRedis = AuthorizationRedis &
  IpLimitRedis &
  RecordRedis &
  SignInBackoffRedis &
  TrialSlotRedis;

/** Defines the edge's scripts on the connection, once however many stores share it. */
function withEdgeScripts(redis: Redis): EdgeRedis {
  if (!("thAuthorizeBatch" in redis)) {
    // Without numberOfKeys the first argument says how many keys follow.
    redis.defineCommand("thAuthorizeBatch", { lua: AUTHORIZE_BATCH_LUA });
    redis.defineCommand("thAuthorizeSession", { numberOfKeys: 3, lua: AUTHORIZE_SESSION_LUA });
    redis.defineCommand("thIpLimit", { numberOfKeys: 2, lua: IP_LIMIT_LUA });
    redis.defineCommand("thPutKey", { numberOfKeys: 1, lua: PUT_KEY_LUA });
    redis.defineCommand("thPutTenant", { numberOfKeys: 1, lua: PUT_TENANT_LUA });
    redis.defineCommand("thSignInAttempt", { numberOfKeys: 1, lua: SIGN_IN_ATTEMPT_LUA });
    redis.defineCommand("thTrialSlot", { numberOfKeys: 1, lua: TRIAL_SLOT_LUA });
  }
  return redis as EdgeRedis;
}

export function createEdgeStore(redis: Redis, options: EdgeStoreOptions) {
  const edge = withEdgeScripts(redis);
  const context = {
    // Keys built inside a script are not prefixed by ioredis, so the script is told the prefix.
    prefix: `${redis.options.keyPrefix ?? ""}th:`,
    // A tenant record in its last third asks for a background refresh (store/authorization.ts).
    refreshBelowMs: Math.floor((options.tenantTtlSeconds * 1000) / 3),
    calendarOf: dailyCalendar(),
  };
  return {
    ...batchedKeyAuthorization(edge, context, options.onAuthorizeBatch),
    ...sessionAuthorization(edge, context),
    ...sessionMarks(redis),
    ...ipLimits(edge),
    ...signInBackoff(edge),
    ...trialStarts(edge),
    ...cachedRecords(edge, options.tenantTtlSeconds),
  };
}

export type EdgeStore = ReturnType<typeof createEdgeStore>;
