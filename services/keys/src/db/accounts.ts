import { generateApiKey, hashApiKey, lastFour } from "@th/api-keys";
import { TIERS, TRIAL_DAYS } from "@th/billing";
import { contracts, type KeyRevokeReason, type TenantChanged, type Tier } from "@th/contracts";
import { inTransaction, type Pool, type PoolClient } from "@th/db";
import { ApiError, enqueueEvent } from "@th/service-kit";
import { newId } from "../domain/ids.ts";
import {
  DECOY_HASH,
  hashPassword,
  newPasswordToken,
  passwordTokenHash,
  verifyPassword,
} from "../domain/passwords.ts";
import type { PaymentProvider } from "../domain/payment-provider.ts";
import { MONTHLY_PRICE_CENTS } from "../domain/prices.ts";

export const ROTATION_REMINDER_DAYS = 90;
const DAY_MS = 86_400_000;
/** How long a one-time password token is valid, by purpose. */
const PASSWORD_TOKEN_TTL_MS = { trial: 7 * DAY_MS, invite: 7 * DAY_MS, reset: DAY_MS } as const;
type PasswordTokenPurpose = keyof typeof PASSWORD_TOKEN_TTL_MS;

export interface AccountsDeps {
  pool: Pool;
  pepper: Buffer;
  payments: PaymentProvider;
  now: () => Date;
}

/** Who is calling, as the gateway authenticated it. */
export interface Caller {
  tenantId: string;
  memberId: string;
  keyId: string;
}

interface TenantRow {
  id: string;
  company: string;
  tier: Tier;
  status: "trialing" | "active" | "cancelled";
  seats: number;
  lead_views_per_month: number;
  rate_per_minute: number;
  concurrent_webhooks: number;
  payment_customer_ref: string;
  card_brand: string | null;
  card_last4: string | null;
  activated_at: Date;
  trial_ends_at: Date;
  revision: number;
}

/** A tenant row read through `row_to_json`: its timestamps arrive as text. */
type TenantJson = Omit<TenantRow, "activated_at" | "trial_ends_at"> & {
  activated_at: string;
  trial_ends_at: string;
};

function tenantFromJson(tenant: TenantJson): TenantRow {
  return {
    ...tenant,
    activated_at: new Date(tenant.activated_at),
    trial_ends_at: new Date(tenant.trial_ends_at),
  };
}

interface KeyRow {
  id: string;
  tenant_id: string;
  member_id: string;
  label: string;
  key_hash: string;
  last4: string;
  created_at: Date;
  revoked_at: Date | null;
}

export function tenantView(row: TenantRow) {
  return {
    id: row.id,
    company: row.company,
    tier: row.tier,
    status: row.status,
    seats: row.seats,
    lead_views_per_month: row.lead_views_per_month,
    rate_per_minute: row.rate_per_minute,
    concurrent_webhooks: row.concurrent_webhooks,
    trial_ends_at: row.trial_ends_at.toISOString(),
    billing_anniversary: row.activated_at.toISOString().slice(0, 10),
    card: { brand: row.card_brand ?? "card", last4: row.card_last4 ?? "????" },
  };
}

export function tenantChangedEvent(row: TenantRow, now: Date): TenantChanged {
  return {
    tenant_id: row.id,
    revision: row.revision,
    tier: row.tier,
    status: row.status,
    limits: {
      seats: row.seats,
      lead_views_per_month: row.lead_views_per_month,
      rate_per_minute: row.rate_per_minute,
      concurrent_webhooks: row.concurrent_webhooks,
    },
    billing_anniversary: row.activated_at.toISOString().slice(0, 10),
    trial_ends_at: row.trial_ends_at.toISOString(),
    changed_at: now.toISOString(),
  };
}

/** A key as its tenant's admins see it; `memberRemovedAt` is when its issuer left the team. */
function keyView(row: KeyRow, now: Date, memberRemovedAt: Date | null = null) {
  const ageDays = Math.floor((now.getTime() - row.created_at.getTime()) / DAY_MS);
  return {
    id: row.id,
    label: row.label,
    last4: row.last4,
    member_id: row.member_id,
    member_removed: memberRemovedAt !== null,
    revoked: row.revoked_at !== null,
    created_at: row.created_at.toISOString(),
    age_days: ageDays,
    rotation_due: ageDays >= ROTATION_REMINDER_DAYS,
  };
}

async function loadTenant(
  client: PoolClient | Pool,
  tenantId: string,
  forUpdate = false,
): Promise<TenantRow> {
  const { rows } = await client.query<TenantRow>(
    `SELECT * FROM tenants WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [tenantId],
  );
  const row = rows[0];
  if (!row) {
    throw new ApiError("not_found", "tenant not found");
  }
  return row;
}

async function requireAdmin(client: PoolClient | Pool, caller: Caller): Promise<void> {
  const { rows } = await client.query<{ role: string }>(
    "SELECT role FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL",
    [caller.memberId, caller.tenantId],
  );
  if (rows[0]?.role !== "admin") {
    throw new ApiError(
      "forbidden",
      "only the tenant's admins can manage keys, members and the subscription",
    );
  }
}

export function createAccounts(deps: AccountsDeps) {
  const { pool, pepper, payments, now } = deps;

  async function insertKey(client: PoolClient, tenantId: string, memberId: string, label: string) {
    const secret = generateApiKey();
    const issuedAt = now();
    const row: KeyRow = {
      id: newId("key"),
      tenant_id: tenantId,
      member_id: memberId,
      label,
      key_hash: hashApiKey(secret, pepper),
      last4: lastFour(secret),
      created_at: issuedAt,
      revoked_at: null,
    };
    await client.query(
      `INSERT INTO api_keys (id, tenant_id, member_id, label, key_hash, last4, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [row.id, tenantId, memberId, label, row.key_hash, row.last4, issuedAt],
    );
    await enqueueEvent(client, contracts.keyIssued, {
      key_id: row.id,
      tenant_id: tenantId,
      key_hash: row.key_hash,
      last4: row.last4,
      member_id: memberId,
      label,
      issued_at: issuedAt.toISOString(),
    });
    return { ...keyView(row, issuedAt), secret };
  }

  async function revokeRows(
    client: PoolClient,
    rows: KeyRow[],
    caller: Caller | null,
    reason: KeyRevokeReason,
  ): Promise<void> {
    const revokedAt = now();
    for (const row of rows) {
      await client.query(
        "UPDATE api_keys SET revoked_at = $2, revoked_by = $3, revoke_reason = $4 WHERE id = $1",
        [row.id, revokedAt, caller?.memberId ?? null, reason],
      );
      await enqueueEvent(client, contracts.keyRevoked, {
        key_id: row.id,
        tenant_id: row.tenant_id,
        key_hash: row.key_hash,
        last4: row.last4,
        member_id: row.member_id,
        label: row.label,
        revoked_by_member_id: caller?.memberId ?? null,
        reason,
        revoked_at: revokedAt.toISOString(),
      });
    }
  }

  async function insertPasswordToken(
    client: PoolClient,
    tenantId: string,
    memberId: string,
    purpose: PasswordTokenPurpose,
    createdBy: string | null,
  ) {
    const token = newPasswordToken();
    const issuedAt = now();
    const expiresAt = new Date(issuedAt.getTime() + PASSWORD_TOKEN_TTL_MS[purpose]);
    // A new token replaces any earlier one: only the latest link works.
    await client.query(
      "UPDATE password_tokens SET used_at = $2 WHERE member_id = $1 AND used_at IS NULL",
      [memberId, issuedAt],
    );
    await client.query(
      `INSERT INTO password_tokens (token_hash, tenant_id, member_id, purpose, created_by, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [passwordTokenHash(token), tenantId, memberId, purpose, createdBy, issuedAt, expiresAt],
    );
    return { member_id: memberId, purpose, token, expires_at: expiresAt.toISOString() };
  }

  /** A member who may hold a dashboard session: active, of a tenant that is not cancelled. */
  async function sessionMember(client: PoolClient | Pool, memberId: string) {
    const { rows } = await client.query<{
      id: string;
      email: string;
      role: "admin" | "member";
      tenant: TenantJson;
    }>(
      `SELECT m.id, m.email, m.role, row_to_json(t) AS tenant FROM members m
       JOIN tenants t ON t.id = m.tenant_id WHERE m.id = $1 AND m.removed_at IS NULL`,
      [memberId],
    );
    const row = rows[0];
    if (!row) {
      return null;
    }
    const tenant = tenantFromJson(row.tenant);
    return {
      member: { id: row.id, email: row.email, role: row.role },
      company: tenant.company,
      tenant: tenantChangedEvent(tenant, now()),
    };
  }

  async function bumpTenant(client: PoolClient, row: TenantRow): Promise<TenantRow> {
    const { rows } = await client.query<TenantRow>(
      "UPDATE tenants SET revision = revision + 1, updated_at = now() WHERE id = $1 RETURNING *",
      [row.id],
    );
    const updated = rows[0] as TenantRow;
    await enqueueEvent(client, contracts.tenantChanged, tenantChangedEvent(updated, now()));
    return updated;
  }

  return {
    /**
     * Starts a 14-day trial: the card is verified (not charged), and tenant, first admin and
     * first key are created together. A declined card creates nothing.
     */
    async startTrial(input: {
      tier: Tier;
      company: string;
      admin_email: string;
      payment_method: string;
      admin_password?: string | undefined;
    }) {
      const passwordHash = input.admin_password ? await hashPassword(input.admin_password) : null;
      const verification = await payments.verifyCard(input.payment_method, {
        email: input.admin_email,
        company: input.company,
      });
      if (!verification.ok) {
        throw new ApiError("payment_declined", `payment method refused: ${verification.reason}`);
      }
      const activatedAt = now();
      const limits = TIERS[input.tier].limits;
      return inTransaction(pool, async (client) => {
        const { rows } = await client.query<TenantRow>(
          `INSERT INTO tenants (id, company, tier, status, seats, lead_views_per_month, rate_per_minute,
             concurrent_webhooks, payment_customer_ref, card_brand, card_last4, activated_at, trial_ends_at)
           VALUES ($1, $2, $3, 'trialing', $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *`,
          [
            newId("ten"),
            input.company,
            input.tier,
            limits.seats,
            limits.lead_views_per_month,
            limits.rate_per_minute,
            limits.concurrent_webhooks,
            verification.customerRef,
            verification.brand,
            verification.last4,
            activatedAt,
            new Date(activatedAt.getTime() + TRIAL_DAYS * DAY_MS),
          ],
        );
        const tenant = rows[0] as TenantRow;
        const memberId = newId("mem");
        await client.query(
          `INSERT INTO members (id, tenant_id, email, role, created_at, password_hash, password_set_at)
           VALUES ($1, $2, $3, 'admin', $4, $5, $6)`,
          [
            memberId,
            tenant.id,
            input.admin_email,
            activatedAt,
            passwordHash,
            passwordHash ? activatedAt : null,
          ],
        );
        await enqueueEvent(
          client,
          contracts.tenantChanged,
          tenantChangedEvent(tenant, activatedAt),
        );
        const apiKey = await insertKey(client, tenant.id, memberId, "first key");
        const passwordSetup = passwordHash
          ? null
          : await insertPasswordToken(client, tenant.id, memberId, "trial", null);
        return {
          tenant: tenantView(tenant),
          member: {
            id: memberId,
            email: input.admin_email,
            role: "admin" as const,
            created_at: activatedAt.toISOString(),
          },
          api_key: apiKey,
          password_setup: passwordSetup,
        };
      });
    },

    /** What the gateway needs to authorize a request carrying this key hash. */
    async lookupKey(keyHash: string) {
      const { rows } = await pool.query<KeyRow & { tenant: TenantJson }>(
        `SELECT k.*, row_to_json(t) AS tenant FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
         WHERE k.key_hash = $1`,
        [keyHash],
      );
      const row = rows[0];
      if (!row) {
        return null;
      }
      const tenant = tenantFromJson(row.tenant);
      return {
        key_id: row.id,
        tenant_id: row.tenant_id,
        member_id: row.member_id,
        revoked: row.revoked_at !== null,
        tenant: tenantChangedEvent(tenant, now()),
      };
    },

    async listKeys(caller: Caller) {
      await requireAdmin(pool, caller);
      const { rows } = await pool.query<KeyRow & { member_removed_at: Date | null }>(
        `SELECT k.*, m.removed_at AS member_removed_at
           FROM api_keys k JOIN members m ON m.id = k.member_id
          WHERE k.tenant_id = $1 ORDER BY k.created_at, k.id`,
        [caller.tenantId],
      );
      const at = now();
      return rows.map((row) => keyView(row, at, row.member_removed_at));
    },

    async issueKey(caller: Caller, label: string) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        return insertKey(client, caller.tenantId, caller.memberId, label);
      });
    },

    /** Revokes one key of the caller's tenant; another tenant's key is not found. Idempotent. */
    async revokeKey(caller: Caller, keyId: string): Promise<{ keyHash: string }> {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const { rows } = await client.query<KeyRow>(
          "SELECT * FROM api_keys WHERE id = $1 AND tenant_id = $2 FOR UPDATE",
          [keyId, caller.tenantId],
        );
        const row = rows[0];
        if (!row) {
          throw new ApiError("not_found", `no API key ${keyId}`);
        }
        if (row.revoked_at === null) {
          await revokeRows(client, [row], caller, "manual");
        }
        return { keyHash: row.key_hash };
      });
    },

    /**
     * Suspected compromise: every active key of the tenant is revoked, a fresh key is issued to
     * the caller so they are not locked out, and the revocations carry reason `compromise`,
     * which tells the webhook dispatcher to rotate every signing secret of the tenant.
     */
    async revokeAllForCompromise(caller: Caller) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const { rows } = await client.query<KeyRow>(
          "SELECT * FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL FOR UPDATE",
          [caller.tenantId],
        );
        await revokeRows(client, rows, caller, "compromise");
        const apiKey = await insertKey(
          client,
          caller.tenantId,
          caller.memberId,
          "issued after compromise",
        );
        return {
          revokedKeyIds: rows.map((row) => row.id),
          revokedKeyHashes: rows.map((row) => row.key_hash),
          apiKey,
        };
      });
    },

    async listMembers(caller: Caller) {
      const { rows } = await pool.query<{
        id: string;
        email: string;
        role: "admin" | "member";
        created_at: Date;
      }>(
        "SELECT id, email, role, created_at FROM members WHERE tenant_id = $1 AND removed_at IS NULL ORDER BY created_at, id",
        [caller.tenantId],
      );
      return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
    },

    /** Adds a member while seats remain; the tier's seat count is the cap. */
    async addMember(caller: Caller, input: { email: string; role: "admin" | "member" }) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const tenant = await loadTenant(client, caller.tenantId, true);
        const { rows } = await client.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM members WHERE tenant_id = $1 AND removed_at IS NULL",
          [caller.tenantId],
        );
        if ((rows[0]?.n ?? 0) >= tenant.seats) {
          throw new ApiError(
            "seat_limit_reached",
            `all ${tenant.seats} seat(s) of the ${TIERS[tenant.tier].label} tier are taken`,
          );
        }
        const id = newId("mem");
        const createdAt = now();
        try {
          await client.query(
            "INSERT INTO members (id, tenant_id, email, role, created_at) VALUES ($1, $2, $3, $4, $5)",
            [id, caller.tenantId, input.email, input.role, createdAt],
          );
        } catch (error) {
          if ((error as { code?: string }).code === "23505") {
            throw new ApiError("conflict", `${input.email} is already a member`);
          }
          throw error;
        }
        return { id, email: input.email, role: input.role, created_at: createdAt.toISOString() };
      });
    },

    /**
     * Removes a member; the last admin cannot be removed. Keys belong to the tenant, not to a
     * user, so the keys the member issued keep working unless `revokeKeys` asks, as a separate
     * choice, to revoke them too.
     */
    async removeMember(
      caller: Caller,
      memberId: string,
      options: { revokeKeys: boolean },
    ): Promise<{ revokedKeyHashes: string[] }> {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const { rows } = await client.query<{ role: string }>(
          "SELECT role FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL FOR UPDATE",
          [memberId, caller.tenantId],
        );
        if (!rows[0]) {
          throw new ApiError("not_found", `no member ${memberId}`);
        }
        if (rows[0].role === "admin") {
          const admins = await client.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM members WHERE tenant_id = $1 AND role = 'admin' AND removed_at IS NULL",
            [caller.tenantId],
          );
          if ((admins.rows[0]?.n ?? 0) <= 1) {
            throw new ApiError("conflict", "the tenant's last admin cannot be removed");
          }
        }
        await client.query("UPDATE members SET removed_at = now() WHERE id = $1", [memberId]);
        if (!options.revokeKeys) {
          return { revokedKeyHashes: [] };
        }
        const keys = await client.query<KeyRow>(
          "SELECT * FROM api_keys WHERE member_id = $1 AND revoked_at IS NULL FOR UPDATE",
          [memberId],
        );
        await revokeRows(client, keys.rows, caller, "other");
        return { revokedKeyHashes: keys.rows.map((row) => row.key_hash) };
      });
    },

    async getTenant(caller: Caller) {
      return tenantView(await loadTenant(pool, caller.tenantId));
    },

    /**
     * Moves the tenant to another tier; new caps apply from the next request. Asking for the tier
     * the tenant has changes nothing (a Custom tenant keeps its negotiated caps), and a tier with
     * fewer seats than the tenant has members is refused until members are removed.
     */
    async changeTier(caller: Caller, tier: Tier) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const tenant = await loadTenant(client, caller.tenantId, true);
        if (tenant.status === "cancelled") {
          throw new ApiError("conflict", "a cancelled subscription cannot change tier");
        }
        if (tier === tenant.tier) {
          return tenantView(tenant);
        }
        const limits = TIERS[tier].limits;
        const { rows } = await client.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM members WHERE tenant_id = $1 AND removed_at IS NULL",
          [tenant.id],
        );
        const members = rows[0]?.n ?? 0;
        if (members > limits.seats) {
          throw new ApiError(
            "seat_limit_reached",
            `the ${TIERS[tier].label} tier has ${limits.seats} seat(s) and this tenant has ${members} members; remove ${members - limits.seats} before changing tier`,
          );
        }
        await client.query(
          `UPDATE tenants SET tier = $2, seats = $3, lead_views_per_month = $4, rate_per_minute = $5,
             concurrent_webhooks = $6 WHERE id = $1`,
          [
            tenant.id,
            tier,
            limits.seats,
            limits.lead_views_per_month,
            limits.rate_per_minute,
            limits.concurrent_webhooks,
          ],
        );
        return tenantView(await bumpTenant(client, { ...tenant, tier }));
      });
    },

    /**
     * Operators set a Custom tenant's negotiated caps (the tier table gives only its floor).
     * Not reachable from the public API.
     */
    async setCustomLimits(
      tenantId: string,
      limits: Partial<{
        lead_views_per_month: number;
        rate_per_minute: number;
        concurrent_webhooks: number;
        seats: number;
      }>,
    ) {
      return inTransaction(pool, async (client) => {
        const tenant = await loadTenant(client, tenantId, true);
        if (tenant.tier !== "custom") {
          throw new ApiError("conflict", "only Custom tenants have negotiated limits");
        }
        const next = { ...tenant, ...limits };
        await client.query(
          `UPDATE tenants SET seats = $2, lead_views_per_month = $3, rate_per_minute = $4, concurrent_webhooks = $5
           WHERE id = $1`,
          [
            tenantId,
            next.seats,
            next.lead_views_per_month,
            next.rate_per_minute,
            next.concurrent_webhooks,
          ],
        );
        return tenantView(await bumpTenant(client, next));
      });
    },

    /** Cancels at any time. During the trial nothing is ever charged. */
    async cancel(caller: Caller) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const tenant = await loadTenant(client, caller.tenantId, true);
        if (tenant.status !== "cancelled") {
          await client.query(
            "UPDATE tenants SET status = 'cancelled', cancelled_at = $2 WHERE id = $1",
            [tenant.id, now()],
          );
        }
        return tenantView(await bumpTenant(client, tenant));
      });
    },

    /**
     * Day 14: each trial that ended is charged its first month. Success makes it active; a
     * failed charge cancels it. The charge row's unique (tenant, period) makes this safe to run
     * on every replica and to repeat.
     */
    async convertEndedTrials(): Promise<{ activated: string[]; cancelled: string[] }> {
      const at = now();
      const { rows } = await pool.query<TenantRow>(
        "SELECT * FROM tenants WHERE status = 'trialing' AND trial_ends_at <= $1 ORDER BY trial_ends_at",
        [at],
      );
      const activated: string[] = [];
      const cancelled: string[] = [];
      for (const tenant of rows) {
        const result = await payments.charge({
          customerRef: tenant.payment_customer_ref,
          amountCents: MONTHLY_PRICE_CENTS[tenant.tier],
          idempotencyKey: `${tenant.id}:${tenant.trial_ends_at.toISOString()}`,
        });
        await inTransaction(pool, async (client) => {
          const current = await loadTenant(client, tenant.id, true);
          if (current.status !== "trialing") {
            return;
          }
          await client.query(
            `INSERT INTO charges (id, tenant_id, amount_cents, period_start, status, provider_ref)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, period_start) DO NOTHING`,
            [
              newId("chg"),
              tenant.id,
              MONTHLY_PRICE_CENTS[tenant.tier],
              tenant.trial_ends_at,
              result.ok ? "succeeded" : "failed",
              result.ok ? result.providerRef : null,
            ],
          );
          const status = result.ok ? "active" : "cancelled";
          await client.query("UPDATE tenants SET status = $2 WHERE id = $1", [tenant.id, status]);
          await bumpTenant(client, { ...current, status });
          (result.ok ? activated : cancelled).push(tenant.id);
        });
      }
      return { activated, cancelled };
    },

    /**
     * Dashboard sign-in. Every path costs one scrypt check, so the answer time does not tell
     * whether the email exists. An email used in several tenants needs `tenant_id` when the
     * password matches more than one of them.
     */
    async verifyCredentials(input: { email: string; password: string; tenant_id?: string }) {
      const { rows } = await pool.query<{
        id: string;
        tenant_id: string;
        company: string;
        password_hash: string;
      }>(
        `SELECT m.id, m.tenant_id, t.company, m.password_hash FROM members m JOIN tenants t ON t.id = m.tenant_id
         WHERE lower(m.email) = lower($1) AND m.removed_at IS NULL AND m.password_hash IS NOT NULL
           AND t.status IN ('trialing', 'active') AND ($2::text IS NULL OR m.tenant_id = $2)
         ORDER BY m.created_at, m.id`,
        [input.email, input.tenant_id ?? null],
      );
      if (rows.length === 0) {
        await verifyPassword(input.password, DECOY_HASH);
        return null;
      }
      const matching: typeof rows = [];
      for (const row of rows) {
        if (await verifyPassword(input.password, row.password_hash)) {
          matching.push(row);
        }
      }
      if (matching.length > 1) {
        // The caller has shown the password of each: naming them lets a sign-in page ask which.
        throw new ApiError(
          "conflict",
          "this email signs in to several accounts; choose one with tenant_id",
          {
            accounts: matching.map((row) => ({ tenant_id: row.tenant_id, company: row.company })),
          },
        );
      }
      return matching[0] ? sessionMember(pool, matching[0].id) : null;
    },

    /** Whether a member may still hold a session, with the tenant's current snapshot. */
    async sessionState(memberId: string) {
      const state = await sessionMember(pool, memberId);
      if (!state || (state.tenant.status !== "trialing" && state.tenant.status !== "active")) {
        return null;
      }
      return state;
    },

    /**
     * An admin's one-time link for a member of the tenant: `invite` while the member has no
     * password, `reset` afterwards. Any earlier unused link of that member stops working.
     */
    async issuePasswordToken(caller: Caller, memberId: string) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const { rows } = await client.query<{ password_hash: string | null }>(
          "SELECT password_hash FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL FOR UPDATE",
          [memberId, caller.tenantId],
        );
        const member = rows[0];
        if (!member) {
          throw new ApiError("not_found", `no member ${memberId}`);
        }
        return insertPasswordToken(
          client,
          caller.tenantId,
          memberId,
          member.password_hash ? "reset" : "invite",
          caller.memberId,
        );
      });
    },

    /** Sets a password with a one-time token; the token and any other open one are spent. */
    async redeemPasswordToken(token: string, password: string) {
      const hash = await hashPassword(password);
      return inTransaction(pool, async (client) => {
        const { rows } = await client.query<{ member_id: string; expires_at: Date }>(
          `SELECT p.member_id, p.expires_at FROM password_tokens p
           JOIN members m ON m.id = p.member_id AND m.removed_at IS NULL
           WHERE p.token_hash = $1 AND p.used_at IS NULL FOR UPDATE OF p`,
          [passwordTokenHash(token)],
        );
        const row = rows[0];
        const at = now();
        if (!row || row.expires_at.getTime() <= at.getTime()) {
          throw new ApiError(
            "not_found",
            "this password link is unknown, used or expired; ask an admin for a new one",
          );
        }
        await client.query(
          "UPDATE members SET password_hash = $2, password_set_at = $3 WHERE id = $1",
          [row.member_id, hash, at],
        );
        await client.query(
          "UPDATE password_tokens SET used_at = $2 WHERE member_id = $1 AND used_at IS NULL",
          [row.member_id, at],
        );
        return { member_id: row.member_id };
      });
    },

    /** A signed-in member changes their own password, proving the current one. */
    async changePassword(caller: Caller, current: string, next: string) {
      const { rows } = await pool.query<{ password_hash: string | null }>(
        "SELECT password_hash FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL",
        [caller.memberId, caller.tenantId],
      );
      const stored = rows[0]?.password_hash ?? DECOY_HASH;
      if (!(await verifyPassword(current, stored))) {
        throw new ApiError("forbidden", "the current password is not correct");
      }
      await pool.query(
        "UPDATE members SET password_hash = $2, password_set_at = $3 WHERE id = $1",
        [caller.memberId, await hashPassword(next), now()],
      );
    },

    async recordContact(input: {
      name: string;
      email: string;
      company?: string | undefined;
      message: string;
    }) {
      const id = newId("msg");
      const receivedAt = now();
      await pool.query(
        "INSERT INTO contact_requests (id, name, email, company, message, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        [id, input.name, input.email, input.company ?? null, input.message, receivedAt],
      );
      return { id, received_at: receivedAt.toISOString() };
    },
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
