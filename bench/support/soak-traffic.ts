// The soak bench's tenants and their traffic, a simulated day at a time, through the services'
// own paths: trials, watchlists, webhook endpoints, reads, manual runs, replays, sign-ins and
// password links through the gateway; parcels through the parcels service's ingest; voids as
// the gateway's void publisher sends them (a read whose record it gave up).
import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { contracts, type LeadViewVoided } from "@th/contracts";
import { NAL_HEADER_LINE, nalFileName, nalLine } from "@th/parcels/generate";
import { ingestFile } from "@th/parcels/ingest";
import { signedInject } from "@th/service-kit/testing";
import { DAY_MS, dayOf, type SoakClock } from "./soak-clock.ts";
import type { SoakStack } from "./soak-stack.ts";

/** Each tenant's parcels: its watchlist matches them (and no other tenant's). */
const PARCELS_PER_TENANT = 4;
/** One tenant in this many has dashboard members who sign in. */
const DASHBOARD_EVERY = 100;
/** Days between a tenant's changed parcels, its batch reads, its members' sign-ins. */
const CHANGE_EVERY = 7;
const READ_EVERY = 7;
const SIGN_IN_EVERY = 14;
const PASSWORD = "soak bench password, long enough";

export interface Tenant {
  index: number;
  id: string;
  memberId: string;
  email: string;
  key: string;
  watchlistId: string;
  endpointId: string;
  folios: string[];
  dashboard: boolean;
}

/** What the traffic of the whole run produced, as the bench counts it (not the tables). */
export interface TrafficCounts {
  readRequests: number;
  readFolios: number;
  doubleReads: number;
  parcelChanges: number;
  voids: number;
  manualRuns: number;
  replays: number;
  signIns: number;
  passwordLinks: number;
  failures: number;
}

export function emptyCounts(): TrafficCounts {
  return {
    readRequests: 0,
    readFolios: 0,
    doubleReads: 0,
    parcelChanges: 0,
    voids: 0,
    manualRuns: 0,
    replays: 0,
    signIns: 0,
    passwordLinks: 0,
    failures: 0,
  };
}

/**
 * The receiver's answers: most deliveries succeed; of every hundred, four are refused (410, a dead
 * letter at once), four fail once (503, retried after 1 s) and one fails every attempt (503 five
 * times, a dead letter after the ladder). A replay of a dead letter succeeds. The dead letters it
 * causes are noted by the simulated day, for the tenants to replay later.
 */
export class Receiving {
  readonly #clock: SoakClock;
  readonly #start: number;
  readonly #deadLetters = new Map<number, { deliveryId: string; tenant: number }[]>();

  constructor(clock: SoakClock, start: Date) {
    this.#clock = clock;
    this.#start = start.getTime();
  }

  readonly answer = (deliveryId: string, seen: number, tenant: number): number => {
    const bucket = bucketOf(deliveryId, 100);
    const status =
      bucket < 4
        ? seen === 1
          ? 410
          : 200
        : bucket < 8
          ? seen === 1
            ? 503
            : 200
          : bucket === 8 && seen <= 5
            ? 503
            : 200;
    if ((bucket < 4 && seen === 1) || (bucket === 8 && seen === 5)) {
      const day = Math.floor((this.#clock.now() - this.#start) / DAY_MS);
      this.#deadLetters.set(day, [...(this.#deadLetters.get(day) ?? []), { deliveryId, tenant }]);
    }
    return status;
  };

  /** The dead letters of `day`, once. */
  takeDeadLetters(day: number): { deliveryId: string; tenant: number }[] {
    const taken = this.#deadLetters.get(day) ?? [];
    this.#deadLetters.delete(day);
    return taken;
  }
}

function bucketOf(text: string, buckets: number): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0) % buckets;
}

/** A tenant's range of just values: its watchlist's filter, and where its parcels' values lie. */
function valueRange(index: number): { min: number; max: number } {
  const min = 100_000 + index * 1_000;
  return { min, max: min + 999 };
}

function parcelId(index: number, slot: number): string {
  return `7${String(index).padStart(6, "0")}${String(slot).padStart(2, "0")}`;
}

function parcelLine(index: number, slot: number, value: number): string {
  return nalLine({
    CO_NO: 23,
    PARCEL_ID: parcelId(index, slot),
    ASMNT_YR: 2025,
    DOR_UC: "001",
    JV: value,
    OWN_NAME: `OWNER ${index} ${slot}`,
    OWN_ADDR1: `${100 + slot} MAIN ST`,
    OWN_CITY: "MIAMI",
    OWN_STATE: "FL",
    OWN_ZIPCD: "33125",
    PHY_ADDR1: `${100 + slot} MAIN ST`,
    PHY_CITY: "MIAMI",
    PHY_ZIPCD: "33125",
  });
}

/** The parcels service's ingest of one roll file, on the stack's clock. */
async function ingestLines(stack: SoakStack, clock: SoakClock, lines: string[]): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "th-soak-"));
  try {
    const file = join(dir, nalFileName(23, "F", 2025));
    await writeFile(file, `${[NAL_HEADER_LINE, ...lines].join("\r\n")}\r\n`);
    const summary = await ingestFile(
      {
        pool: stack.pools.parcels,
        publish: (records) => stack.harness.bus.publishEncoded(records),
      },
      file,
      { now: () => clock.date(), asOf: new Date("2025-10-01T00:00:00Z"), rejectsPath: null },
    );
    return summary.new + summary.changed;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

type Method = "GET" | "POST" | "PUT" | "DELETE";

/** A call to the gateway as a client on the internet would make it. */
async function gatewayCall(
  stack: SoakStack,
  method: Method,
  url: string,
  init: { key?: string; body?: unknown; ip?: string } = {},
) {
  const http = stack.gateway.http;
  if (!http) {
    throw new Error("the gateway has no HTTP app");
  }
  return http.inject({
    method,
    url,
    remoteAddress: init.ip ?? "203.0.113.10",
    headers: init.key ? { authorization: `Bearer ${init.key}` } : {},
    ...(init.body !== undefined ? { payload: init.body as object } : {}),
  });
}

function expectStatus(
  response: { statusCode: number; body: string },
  status: number,
  what: string,
) {
  if (response.statusCode !== status) {
    throw new Error(`${what}: ${response.statusCode} ${response.body.slice(0, 300)}`);
  }
}

/** An address of its own per public call, so no per-address window refuses the setup. */
function addressOf(n: number): string {
  return `198.18.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
}

async function startTrial(stack: SoakStack, index: number, dashboard: boolean) {
  const response = await gatewayCall(stack, "POST", "/v1/public/trials", {
    ip: addressOf(index),
    body: {
      tier: "custom",
      company: `Soak ${index}`,
      admin_email: `owner${index}@soak${index}.test`,
      payment_method: "pm_card_visa",
      ...(dashboard ? { admin_password: PASSWORD } : {}),
    },
  });
  expectStatus(response, 201, "trial");
  const body = response.json();
  return {
    id: body.tenant.id as string,
    memberId: body.member.id as string,
    email: body.member.email as string,
    key: body.api_key.secret as string,
  };
}

/** Operator tooling: caps no soak reaches, so reads and deliveries are never refused for quota. */
async function raiseLimits(stack: SoakStack, tenantId: string): Promise<void> {
  const http = stack.keys.http;
  if (!http) {
    throw new Error("the keys service has no HTTP app");
  }
  const response = await http.inject(
    signedInject(http, "keys", {
      method: "PUT",
      url: `/internal/v1/operator/tenants/${tenantId}/limits`,
      body: { rate_per_minute: 1_000_000, lead_views_per_month: 10_000_000 },
    }),
  );
  expectStatus(response, 200, "limits");
  await stack.gateway.store.forgetTenant(tenantId);
}

/** Subscribes the receiver, once the dispatcher has heard of the tenant. */
async function subscribe(stack: SoakStack, tenant: Omit<Tenant, "endpointId">): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const response = await gatewayCall(
      stack,
      "POST",
      `/v1/watchlists/${tenant.watchlistId}/webhooks`,
      {
        key: tenant.key,
        body: { url: `${stack.receiver.url}?t=${tenant.index}`, events: ["watchlist.match"] },
      },
    );
    if (response.statusCode === 201) {
      return response.json().id as string;
    }
    if (attempt > 200) {
      expectStatus(response, 201, "subscribe");
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function setUpTenant(stack: SoakStack, index: number): Promise<Tenant> {
  const dashboard = index % DASHBOARD_EVERY === 0;
  const trial = await startTrial(stack, index, dashboard);
  await raiseLimits(stack, trial.id);
  const created = await gatewayCall(stack, "POST", "/v1/watchlists", {
    key: trial.key,
    body: {
      name: `Soak ${index}`,
      recipe: { filters: { counties: [23], just_value: valueRange(index) } },
    },
  });
  expectStatus(created, 201, "watchlist");
  const tenant = {
    index,
    id: trial.id,
    memberId: trial.memberId,
    email: trial.email,
    key: trial.key,
    watchlistId: created.json().id as string,
    folios: Array.from({ length: PARCELS_PER_TENANT }, (_, slot) => `23-${parcelId(index, slot)}`),
    dashboard,
  };
  return { ...tenant, endpointId: await subscribe(stack, tenant) };
}

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await work(item);
      }
    }),
  );
}

/**
 * The roll (every tenant's parcels, before any watchlist, so it matches nothing), then the
 * tenants: a trial each, the operator's caps, a watchlist on its parcels and the receiver
 * subscribed to it.
 */
export async function setUpTenants(
  stack: SoakStack,
  clock: SoakClock,
  count: number,
): Promise<Tenant[]> {
  const lines: string[] = [];
  for (let index = 0; index < count; index++) {
    for (let slot = 0; slot < PARCELS_PER_TENANT; slot++) {
      lines.push(parcelLine(index, slot, valueRange(index).min + slot));
    }
  }
  await ingestLines(stack, clock, lines);
  // The roll matched (against no watchlist yet) and held by the projection manual runs read.
  for (const group of ["matcher.match", "matcher.parcels"]) {
    while (!(await stack.caughtUp(group, "parcel.ingested"))) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  const tenants: Tenant[] = [];
  await inParallel(
    Array.from({ length: count }, (_, index) => index),
    8,
    async (index) => {
      tenants.push(await setUpTenant(stack, index));
    },
  );
  return tenants.sort((a, b) => a.index - b.index);
}

/** What one simulated day asks of the tenants; `day` counts from the first simulated day. */
export interface DayPlan {
  day: number;
  at: Date;
  scale: number;
}

/** Once a week a tenant has a changed parcel (a new match, and a delivery of it). */
export async function changeParcels(
  stack: SoakStack,
  clock: SoakClock,
  tenants: readonly Tenant[],
  plan: DayPlan,
  counts: TrafficCounts,
): Promise<number> {
  const lines: string[] = [];
  for (const tenant of tenants) {
    if ((tenant.index + plan.day) % CHANGE_EVERY !== 0) {
      continue;
    }
    for (let n = 0; n < plan.scale; n++) {
      const slot = (Math.floor(plan.day / CHANGE_EVERY) + n) % PARCELS_PER_TENANT;
      // A value of the tenant's range not held the day before, so the parcel's content changes.
      const value = valueRange(tenant.index).min + ((plan.day * 7 + slot) % 1_000);
      lines.push(parcelLine(tenant.index, slot, value));
    }
  }
  const changed = await ingestLines(stack, clock, lines);
  counts.parcelChanges += changed;
  return changed;
}

/**
 * Once a week a tenant reads its parcels and its neighbour's in one batch; one reader in four
 * sends the same batch twice at once (a client retrying), so the second read records what the
 * first charged moments before: the ledger keeps it as a runner-up.
 */
export async function readLeads(
  stack: SoakStack,
  tenants: readonly Tenant[],
  plan: DayPlan,
  counts: TrafficCounts,
): Promise<void> {
  const readers = tenants.filter((tenant) => (tenant.index + plan.day) % READ_EVERY === 3);
  await inParallel(readers, 64, async (tenant) => {
    const folios = Array.from(
      { length: 1 + plan.scale },
      (_, k) => tenants[(tenant.index + k) % tenants.length]?.folios ?? [],
    ).flat();
    const twice = (tenant.index + plan.day) % (4 * READ_EVERY) === 3;
    const read = () =>
      gatewayCall(stack, "POST", "/v1/leads/batch", { key: tenant.key, body: { folios } });
    const answers = await Promise.all(twice ? [read(), read()] : [read()]);
    for (const answer of answers) {
      if (answer.statusCode === 200) {
        counts.readRequests++;
        counts.readFolios += folios.length;
      } else {
        counts.failures++;
      }
    }
    counts.doubleReads += twice ? 1 : 0;
  });
}

/**
 * A few reads a day whose records the gateway gave up: their voids, as its void publisher sends
 * them (leadview.voided, the read's day and folios).
 */
export async function publishVoids(
  stack: SoakStack,
  tenants: readonly Tenant[],
  plan: DayPlan,
  counts: TrafficCounts,
): Promise<void> {
  const voids: LeadViewVoided[] = tenants
    .filter((tenant) => (tenant.index * 7 + plan.day) % 40 === 0)
    .map((tenant) => ({
      tenant_id: tenant.id,
      request_id: `req_${randomUUID().replaceAll("-", "")}`,
      day: dayOf(plan.at),
      folios: tenant.folios.slice(0, 1 + (plan.day % 3)),
      reason: "publish_timeout",
      voided_at: plan.at.toISOString(),
    }));
  if (voids.length > 0) {
    await stack.harness.bus.publish(contracts.leadViewVoided, voids);
    counts.voids += voids.length;
  }
}

/** A manual run every fourth day (with 200 tenants), of a tenant's watchlist. */
export async function startManualRuns(
  stack: SoakStack,
  tenants: readonly Tenant[],
  plan: DayPlan,
  counts: TrafficCounts,
): Promise<void> {
  for (const tenant of tenants.filter((each) => (each.index * 4 + plan.day) % 800 === 0)) {
    const response = await gatewayCall(stack, "POST", `/v1/watchlists/${tenant.watchlistId}/run`, {
      key: tenant.key,
    });
    if (response.statusCode === 202) {
      counts.manualRuns++;
    } else {
      counts.failures++;
    }
  }
  await stack.matcher.runs.settle();
}

/**
 * Half of the dead letters made two days before are replayed through the delivery log, as a
 * tenant does once its receiver is fixed.
 */
export async function replayDeadLetters(
  stack: SoakStack,
  receiving: Receiving,
  tenants: readonly Tenant[],
  plan: DayPlan,
  counts: TrafficCounts,
): Promise<void> {
  for (const { deliveryId, tenant: index } of receiving.takeDeadLetters(plan.day - 2)) {
    const tenant = tenants[index];
    if (!tenant || bucketOf(deliveryId, 2) !== 0) {
      continue;
    }
    const response = await gatewayCall(
      stack,
      "POST",
      `/v1/watchlists/${tenant.watchlistId}/webhooks/${tenant.endpointId}/deliveries/${deliveryId}:replay`,
      { key: tenant.key },
    );
    if (response.statusCode < 300) {
      counts.replays++;
    } else {
      counts.failures++;
    }
  }
}

/**
 * The dashboard tenants' members sign in every two weeks (a session and its refresh token each;
 * a password check costs tens of milliseconds of CPU), and get a password link (an admin's
 * reset) in the weeks between.
 */
export async function dashboardVisits(
  stack: SoakStack,
  tenants: readonly Tenant[],
  plan: DayPlan,
  counts: TrafficCounts,
): Promise<void> {
  for (const tenant of tenants.filter((each) => each.dashboard)) {
    if ((tenant.index / DASHBOARD_EVERY + plan.day) % SIGN_IN_EVERY === 0) {
      const response = await gatewayCall(stack, "POST", "/v1/dashboard/session", {
        ip: addressOf(10_000 + plan.day * 50 + tenant.index / DASHBOARD_EVERY),
        body: { email: tenant.email, password: PASSWORD },
      });
      response.statusCode === 201 ? counts.signIns++ : counts.failures++;
    }
    if ((tenant.index / DASHBOARD_EVERY + plan.day) % SIGN_IN_EVERY === 7) {
      const response = await gatewayCall(
        stack,
        "POST",
        `/v1/team/members/${tenant.memberId}/password-token`,
        { key: tenant.key },
      );
      response.statusCode === 201 ? counts.passwordLinks++ : counts.failures++;
    }
  }
}
