// The keys service of a route or retention test: its app on a test harness, a clock the test
// moves, and the signed internal calls the gateway and dashboard would make. Test fixture only:
// never imported by production code.
import { contracts } from "@th/contracts";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, expect } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { LocalPaymentProvider } from "../domain/payment-provider.ts";

type App = Awaited<ReturnType<typeof buildApp>>;

/**
 * The keys app, built before the file's tests on a harness of its own and closed after them,
 * with the clock at `clock` until a test sets `clock`. Trial admins get addresses at
 * `emailDomain`, one company each.
 */
export function useKeysApp(options: { clock: Date; emailDomain: string }) {
  const keys = { clock: options.clock } as { harness: TestHarness<Config>; app: App; clock: Date };
  let trials = 0;

  /** A signed internal call; `headers` name the caller, if any. */
  function call(
    method: "GET" | "POST" | "PUT",
    url: string,
    headers: Record<string, string> = {},
    payload?: object,
  ) {
    const http = keys.app.http;
    if (!http) {
      throw new Error("no http app");
    }
    return http.inject(signedInject(http, "keys", { method, url, headers, body: payload }));
  }

  /**
   * A trial started through the internal API (checked to answer 201), its admin with `password`
   * when one is given: the admin's email, the response body, and the admin as a caller.
   */
  async function startTrial(tier: string, password?: string) {
    trials++;
    const email = `owner${trials}@${options.emailDomain}`;
    const response = await call(
      "POST",
      "/internal/v1/trials",
      {},
      {
        tier,
        company: `Acme ${trials}`,
        admin_email: email,
        payment_method: "pm_card_visa",
        ...(password ? { admin_password: password } : {}),
      },
    );
    expect(response.statusCode).toBe(201);
    const body = response.json();
    return {
      email,
      body,
      caller: { tenantId: body.tenant.id as string, memberId: body.member.id as string },
    };
  }

  beforeAll(async () => {
    keys.harness = await createTestHarness({
      config: readConfig({}),
      migrations: [migrations],
      topics: [contracts.tenantChanged, contracts.keyIssued, contracts.keyRevoked],
    });
    keys.app = await buildApp(keys.harness, {
      payments: new LocalPaymentProvider(),
      now: () => keys.clock,
    });
  });
  afterAll(async () => {
    await keys.app?.http?.close();
    await keys.app?.stop();
    await keys.harness?.close();
  });
  return Object.assign(keys, { call, startTrial });
}
