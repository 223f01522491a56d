// Retention of what stops being usable (decision 0394): sessions and their refresh tokens a day
// past their expiry, and never before, so reuse detection (decision 0337) keeps working for as
// long as a session can be refreshed; password and invite links and pending trials likewise.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useKeysApp } from "../testing/keys-app.ts";
import { EXPIRING } from "./retention.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const keys = useKeysApp({
  clock: new Date("2026-11-01T10:00:00Z"),
  emailDomain: "retention.test",
});

/** A trial whose admin has a password, and a sign-in of a week. */
async function signedIn() {
  const trial = await keys.startTrial("team", "a long enough passphrase");
  const opened = await keys.call(
    "POST",
    "/internal/v1/sessions",
    {},
    {
      email: trial.email,
      password: "a long enough passphrase",
      lifetime_seconds: 7 * 86_400,
    },
  );
  expect(opened.statusCode).toBe(201);
  const { session } = opened.json();
  return {
    ...trial.caller,
    id: session.id as string,
    token: session.refresh_token as string,
  };
}

const refresh = (sessionId: string, token: string) =>
  keys.call(
    "POST",
    "/internal/v1/sessions/refresh",
    {},
    {
      session_id: sessionId,
      refresh_token: token,
    },
  );

async function rowsOf(sessionId: string) {
  const { rows } = await keys.harness.pool.query<{ sessions: number; tokens: number }>(
    `SELECT (SELECT count(*)::int FROM dashboard_sessions WHERE id = $1) AS sessions,
            (SELECT count(*)::int FROM dashboard_refresh_tokens WHERE session_id = $1) AS tokens`,
    [sessionId],
  );
  return rows[0];
}

describe("session retention", () => {
  it("keeps a live session and its spent tokens: after a round, the owner refreshes and a reused token still ends the session", async () => {
    const start = new Date("2026-11-01T10:00:00Z");
    keys.clock = start;
    const session = await signedIn();
    const first = await refresh(session.id, session.token);
    expect(first.statusCode).toBe(200);
    const next = first.json().session.refresh_token as string;
    // Six days on, still a day inside the week the session lives.
    keys.clock = new Date(start.getTime() + 6 * DAY);
    await keys.app.retention.runOnce();
    expect(await rowsOf(session.id)).toEqual({ sessions: 1, tokens: 2 });
    const owner = await refresh(session.id, next);
    expect(owner.statusCode).toBe(200);
    // The token spent six days ago, presented again: two parties hold the session, it ends.
    expect((await refresh(session.id, session.token)).statusCode).toBe(401);
    expect((await refresh(session.id, owner.json().session.refresh_token)).statusCode).toBe(401);
  });

  it("keeps an expired session and its tokens for the day of grace, then removes both", async () => {
    const start = new Date("2026-12-01T10:00:00Z");
    keys.clock = start;
    const session = await signedIn();
    expect((await refresh(session.id, session.token)).statusCode).toBe(200);
    const expiry = start.getTime() + 7 * DAY;
    keys.clock = new Date(expiry + DAY - HOUR);
    await keys.app.retention.runOnce();
    expect(await rowsOf(session.id)).toEqual({ sessions: 1, tokens: 2 });
    keys.clock = new Date(expiry + DAY + HOUR);
    const removed = await keys.app.retention.runOnce();
    expect(removed.get("keys.dashboard_refresh_tokens")).toBeGreaterThanOrEqual(2);
    expect(removed.get("keys.dashboard_sessions")).toBeGreaterThanOrEqual(1);
    expect(await rowsOf(session.id)).toEqual({ sessions: 0, tokens: 0 });
    // Gone is refused as ended is.
    expect((await refresh(session.id, session.token)).statusCode).toBe(401);
  });
});

describe("password link and pending trial retention", () => {
  it("removes password and invite links a day past their expiry, used or not, and keeps the rest", async () => {
    keys.clock = new Date("2027-01-10T10:00:00Z");
    const { tenantId, memberId } = await signedIn();
    const link = async (purpose: string, expiresAt: Date, used: boolean) => {
      const hash = randomUUID();
      await keys.harness.pool.query(
        `INSERT INTO password_tokens (token_hash, tenant_id, member_id, purpose, created_at,
                                      expires_at, used_at)
         VALUES ($1, $2, $3, $4, $5, $5, $6)`,
        [hash, tenantId, memberId, purpose, expiresAt, used ? expiresAt : null],
      );
      return hash;
    };
    const past = (ms: number) => new Date(keys.clock.getTime() - ms);
    await link("invite", past(DAY + HOUR), false);
    await link("reset", past(3 * DAY), true);
    const kept = [
      await link("invite", past(DAY - HOUR), false),
      await link("reset", new Date(keys.clock.getTime() + HOUR), false),
    ];
    await keys.app.retention.runOnce();
    const { rows } = await keys.harness.pool.query<{ token_hash: string }>(
      "SELECT token_hash FROM password_tokens WHERE member_id = $1",
      [memberId],
    );
    expect(rows.map((row) => row.token_hash).sort()).toEqual(kept.sort());
  });

  it("removes a pending trial a day after its hour to authenticate ended, and keeps a younger one", async () => {
    keys.clock = new Date("2027-02-10T10:00:00Z");
    const pending = async (createdAt: Date) => {
      const ref = `seti_${randomUUID().replaceAll("-", "")}`;
      await keys.harness.pool.query(
        `INSERT INTO pending_trials (setup_intent_ref, client_secret_sha256, tenant_id, tier,
           company, admin_email, payment_method, customer_ref, card_fingerprint, card_brand,
           card_last4, card_claimed_at, created_at)
         VALUES ($1, 'x', $2, 'team', 'Acme', 'a@b.test', 'pm', 'cus', $1, 'visa', '4242', $3, $3)`,
        [ref, `ten_${randomUUID()}`, createdAt],
      );
      return ref;
    };
    await pending(new Date(keys.clock.getTime() - HOUR - DAY - 60_000));
    const kept = await pending(new Date(keys.clock.getTime() - HOUR - DAY + 60_000));
    await keys.app.retention.runOnce();
    const { rows } = await keys.harness.pool.query<{ setup_intent_ref: string }>(
      "SELECT setup_intent_ref FROM pending_trials",
    );
    expect(rows.map((row) => row.setup_intent_ref)).toEqual([kept]);
  });
});

describe("the batches", () => {
  it("find their rows through an index of each table, never a sequential scan", async () => {
    const client = await keys.harness.pool.connect();
    try {
      await client.query("BEGIN");
      // Scans the planner could avoid become its last resort, so any left needs an index.
      await client.query("SET LOCAL enable_seqscan = off");
      for (const rule of EXPIRING) {
        const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${rule.deleteSql}`, [
          keys.clock,
          1_000,
        ]);
        const plan = rows.map((row) => row["QUERY PLAN"]).join("\n");
        expect(plan, rule.table).not.toMatch(/Seq Scan/);
        expect(plan, rule.table).toMatch(/Index (Only )?Scan/);
      }
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
