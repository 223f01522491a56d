// The rules of service-shape.test.ts, each shown catching the break it is for (and passing what
// is not one), so a rule that stops seeing its break fails here and not silently there.
import { describe, expect, it } from "vitest";
import {
  impurity,
  looksLikeSql,
  mayReadEnvironment,
  maySql,
  serviceReached,
  unclassifiedFolders,
} from "./support/service-shape-rules.ts";

const domain = "services/example/src/domain/rule.ts";
const imports = (from: string) => impurity(domain, { from, names: ["x"] });

describe("the domain purity rule", () => {
  it("catches an import of each I/O folder of a service", () => {
    for (const folder of [
      "db",
      "clients",
      "delivery",
      "routes",
      "consumers",
      "edge",
      "matching",
      "ingest",
      "endpoints",
    ]) {
      expect(imports(`../${folder}/part.ts`), folder).toContain(`(${folder}/)`);
    }
  });

  it("catches the edge, matching, ingest and endpoints folders from a nested domain file", () => {
    const nested = "services/example/src/domain/rules/rule.ts";
    expect(impurity(nested, { from: "../../edge/authenticate.ts", names: ["x"] })).toContain(
      "edge/",
    );
    expect(impurity(nested, { from: "../../matching/run.ts", names: ["x"] })).toContain(
      "matching/",
    );
    expect(impurity(nested, { from: "../../ingest/cli.ts", names: ["x"] })).toContain("ingest/");
    expect(impurity(nested, { from: "../../endpoints/store.ts", names: ["x"] })).toContain(
      "endpoints/",
    );
  });

  it("catches I/O packages and lets pure imports pass", () => {
    expect(imports("pg")).toBeDefined();
    expect(imports("node:fs/promises")).toBeDefined();
    expect(imports("@th/service-kit")).toBeDefined();
    expect(imports("@th/service-kit/cursor")).toBeUndefined();
    expect(imports("./score.ts")).toBeUndefined();
    expect(imports("../testing/fixtures.ts")).toBeUndefined();
  });

  it("allows a listed exception only for the names it lists", () => {
    const address = "services/webhook-dispatcher/src/domain/address.ts";
    expect(impurity(address, { from: "node:net", names: ["isIP"] })).toBeUndefined();
    expect(impurity(address, { from: "node:net", names: ["connect"] })).toBeDefined();
  });

  it("names a service folder it does not know, and knows the I/O, pure and fixture ones", () => {
    expect(
      unclassifiedFolders("example", [
        "db",
        "edge",
        "matching",
        "ingest",
        "endpoints",
        "domain",
        "testing",
        "jobs",
      ]),
    ).toEqual(["services/example/src/jobs/"]);
  });
});

describe("the SQL detector", () => {
  it("catches the upper-case statements, followed by a space or a line break", () => {
    expect(looksLikeSql("SELECT id FROM parcels")).toBe(true);
    expect(looksLikeSql("SELECT\n  id\nFROM parcels")).toBe(true);
    expect(looksLikeSql("UPDATE runs SET x = 1")).toBe(true);
    expect(looksLikeSql("INSERT INTO runs (id) VALUES ($1)")).toBe(true);
    expect(looksLikeSql("DELETE FROM runs WHERE id = $1")).toBe(true);
    expect(looksLikeSql("UNLISTEN matcher_watchlists")).toBe(true);
    expect(looksLikeSql("CREATE INDEX runs_at ON runs (at)")).toBe(true);
  });

  it("catches WITH, upper-case or lower-case", () => {
    expect(looksLikeSql("WITH due AS (SELECT id FROM deliveries) UPDATE deliveries")).toBe(true);
    expect(looksLikeSql("WITH\ndue AS (")).toBe(true);
    expect(looksLikeSql("with recursive pending as (select 1)")).toBe(true);
    expect(looksLikeSql("with due (id) as materialized (")).toBe(true);
  });

  it("catches COPY, upper-case or lower-case", () => {
    expect(looksLikeSql("COPY parcels.parcels (folio, row) FROM STDIN WITH (FORMAT binary)")).toBe(
      true,
    );
    expect(looksLikeSql("copy staging (folio, line) from stdin")).toBe(true);
    expect(looksLikeSql("copy (select 1) to stdout")).toBe(true);
  });

  it("catches lower-case statements that open a string", () => {
    expect(looksLikeSql("select id, folio from parcels where folio = $1")).toBe(true);
    expect(looksLikeSql("select * from runs")).toBe(true);
    expect(looksLikeSql("  insert into runs (id) values ($1)")).toBe(true);
    expect(looksLikeSql("update runs set finished_at = now()")).toBe(true);
    expect(looksLikeSql("delete from runs where id = $1")).toBe(true);
    expect(looksLikeSql("listen matcher_watchlists")).toBe(true);
  });

  it("lets prose and identifiers pass", () => {
    expect(looksLikeSql("select a plan to see more leads")).toBe(false);
    expect(looksLikeSql("Update your card to keep your plan")).toBe(false);
    expect(looksLikeSql("sign in with your key")).toBe(false);
    expect(looksLikeSql("copy the key now: it is shown once")).toBe(false);
    expect(looksLikeSql("DELETE /v1/keys/:id")).toBe(false);
    expect(looksLikeSql("selection")).toBe(false);
  });
});

describe("where SQL and the environment may be", () => {
  it("allows SQL in a service's db/ and its testing/ fixtures, and a package's named homes only", () => {
    expect(maySql("services/matcher/src/db/matches.ts")).toBe(true);
    expect(maySql("services/matcher/src/matching/run.ts")).toBe(false);
    expect(maySql("services/parcels/src/ingest/cli.ts")).toBe(false);
    expect(maySql("services/parcels/src/testing/ingest-runs.ts")).toBe(true);
    expect(maySql("services/parcels/src/testingx/ingest-runs.ts")).toBe(false);
    expect(maySql("packages/db/src/copy.ts")).toBe(true);
    expect(maySql("packages/service-kit/src/outbox.ts")).toBe(true);
    expect(maySql("packages/service-kit/src/app.ts")).toBe(false);
    expect(maySql("packages/quota/src/meter.ts")).toBe(false);
  });

  it("allows process.env in a service's config.ts and a package's named readers only", () => {
    expect(mayReadEnvironment("services/keys/src/config.ts")).toBe(true);
    expect(mayReadEnvironment("services/keys/src/app.ts")).toBe(false);
    expect(mayReadEnvironment("packages/config/src/index.ts")).toBe(true);
    expect(mayReadEnvironment("packages/test-stores/src/choice.ts")).toBe(true);
    expect(mayReadEnvironment("packages/bus/src/bus.ts")).toBe(false);
    expect(mayReadEnvironment("packages/db/src/pool.ts")).toBe(false);
  });
});

describe("the service boundary", () => {
  const services = ["gateway", "keys", "webhook-dispatcher"];

  it("catches a service reaching another by path or by package name", () => {
    const file = "services/gateway/src/routes/keys.ts";
    expect(serviceReached(file, "../../../keys/src/db/accounts.ts", services)).toBe("keys");
    expect(serviceReached(file, "@th/keys", services)).toBe("keys");
    expect(serviceReached(file, "@th/webhook-dispatcher/domain", services)).toBe(
      "webhook-dispatcher",
    );
    expect(serviceReached(file, "../edge/authenticate.ts", services)).toBeUndefined();
    expect(serviceReached(file, "@th/gateway/heap", services)).toBeUndefined();
    expect(serviceReached(file, "@th/contracts", services)).toBeUndefined();
  });

  it("catches a package reaching a service by path or by package name", () => {
    const file = "packages/dashboard/src/ui/api.ts";
    expect(serviceReached(file, "../../../../services/keys/src/app.ts", services)).toBe("keys");
    expect(serviceReached(file, "@th/gateway", services)).toBe("gateway");
    expect(serviceReached(file, "@th/api-schemas", services)).toBeUndefined();
    expect(serviceReached(file, "./components.tsx", services)).toBeUndefined();
  });
});
