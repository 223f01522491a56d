// The pipeline's internal API on real Postgres and a dev broker, called as the gateway calls it
// (signed, naming the caller). Each test names the rule it proves.
import { unservedOperations } from "@th/api-schemas";
import { done, on } from "@th/bus";
import { contracts, type PipelineItemChanged } from "@th/contracts";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, type PipelineApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { foldEvents } from "../domain/items.ts";
import { syntheticLead } from "../testing/leads.ts";

let harness: TestHarness<Config>;
let app: PipelineApp;
let tenants = 0;
let folios = 0;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({ MAX_NOTES_PER_ITEM: "3", MAX_ITEMS_PER_TENANT: "40" }),
    migrations: [migrations],
    topics: [contracts.pipelineItemChanged, contracts.pipelineStageChanged],
  });
  app = await buildApp(harness);
});
afterAll(async () => {
  await app.stop();
  await app.http?.close();
  await harness.close();
});

type Method = "GET" | "POST" | "PATCH" | "DELETE";

/** A tenant and its member, calling as the gateway does. */
function tenant(member = "mem_a") {
  tenants++;
  const tenantId = `ten_${tenants}_${Date.now()}`;
  const as = (memberId: string) =>
    async function call(method: Method, url: string, body?: unknown) {
      const http = app.http;
      if (!http) {
        throw new Error("no http app");
      }
      return http.inject(
        signedInject(http, "pipeline", {
          method,
          url,
          ...(body !== undefined ? { body } : {}),
          headers: {
            "x-th-tenant-id": tenantId,
            "x-th-member-id": memberId,
            "x-th-key-id": "key_test",
          },
        }),
      );
    };
  return { tenantId, call: as(member), as };
}

function nextFolio(): string {
  folios++;
  return `23-${String(300000 + folios)}`;
}

type Call = ReturnType<typeof tenant>["call"];

async function addItem(call: Call, extra: Record<string, unknown> = {}) {
  const folio = nextFolio();
  const response = await call("POST", "/internal/v1/pipeline/items", {
    folio,
    lead: syntheticLead(folio),
    ...extra,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function stagesOf(call: Call) {
  return (await call("GET", "/internal/v1/pipeline/stages")).json().data as {
    id: string;
    name: string;
    position: number;
    retired: boolean;
  }[];
}

async function historyOf(call: Call, itemId: string) {
  return (await call("GET", `/internal/v1/pipeline/items/${itemId}/history`)).json().data;
}

describe("the operation table", () => {
  it("has a route at the internal path of every public operation the pipeline service owns", () => {
    const { owned, unserved } = unservedOperations("pipeline", (route) =>
      Boolean(app.http?.hasRoute(route)),
    );
    expect(owned).toBeGreaterThan(0);
    expect(unserved).toEqual([]);
  });

  it("refuses a call that is not signed by the gateway", async () => {
    const response = await app.http?.inject({
      method: "GET",
      url: "/internal/v1/pipeline/stages",
      headers: { "x-th-tenant-id": "ten_x", "x-th-member-id": "m", "x-th-key-id": "key_x" },
    });
    expect(response?.statusCode).toBe(401);
  });
});

describe("Pipeline stages", () => {
  it("a new tenant starts with New, Contacted, Follow-up, Offer made, Under contract, Closed won and Closed lost", async () => {
    const { call } = tenant();
    const stages = await stagesOf(call);
    expect(stages.map((stage) => stage.name)).toEqual([
      "New",
      "Contacted",
      "Follow-up",
      "Offer made",
      "Under contract",
      "Closed won",
      "Closed lost",
    ]);
    expect(stages.map((stage) => stage.position)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // Read again, and read at once by many: still seven.
    await Promise.all(Array.from({ length: 5 }, () => stagesOf(call)));
    expect(await stagesOf(call)).toHaveLength(7);
  });

  it("first reads at the same moment write the defaults once", async () => {
    const { call } = tenant();
    const all = await Promise.all(Array.from({ length: 8 }, () => stagesOf(call)));
    expect(all.every((stages) => stages.length === 7)).toBe(true);
    expect(new Set(all.map((stages) => stages.map((stage) => stage.id).join()))).toHaveProperty(
      "size",
      1,
    );
  });

  it("adds, renames, reorders and retires stages; a retired stage keeps its items readable and takes no new ones", async () => {
    const { call } = tenant();
    const added = await call("POST", "/internal/v1/pipeline/stages", {
      name: "Appointment set",
      position: 2,
    });
    expect(added.statusCode).toBe(201);
    const stage = added.json();
    expect((await stagesOf(call)).map((each) => each.name).slice(0, 4)).toEqual([
      "New",
      "Contacted",
      "Appointment set",
      "Follow-up",
    ]);
    const renamed = await call("PATCH", `/internal/v1/pipeline/stages/${stage.id}`, {
      name: "Walkthrough",
      position: 0,
    });
    expect(renamed.json()).toMatchObject({ name: "Walkthrough", position: 0 });
    expect((await stagesOf(call)).map((each) => each.position)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);

    const item = await addItem(call, { stage_id: stage.id });
    const retired = await call("PATCH", `/internal/v1/pipeline/stages/${stage.id}`, {
      retired: true,
    });
    expect(retired.json().retired).toBe(true);
    const read = await call("GET", `/internal/v1/pipeline/items/${item.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json().stage_id).toBe(stage.id);
    const listed = await call("GET", `/internal/v1/pipeline/items?stage_id=${stage.id}`);
    expect(listed.json().data.map((each: { id: string }) => each.id)).toEqual([item.id]);

    const folio = nextFolio();
    const refused = await call("POST", "/internal/v1/pipeline/items", {
      folio,
      lead: syntheticLead(folio),
      stage_id: stage.id,
    });
    expect(refused.statusCode).toBe(409);
    const [first] = await stagesOf(call);
    const elsewhere = await addItem(call);
    const moveIn = await call("POST", `/internal/v1/pipeline/items/${elsewhere.id}/move`, {
      stage_id: stage.id,
      version: elsewhere.version,
    });
    expect(moveIn.statusCode).toBe(409);
    expect(first?.id).toBe(stage.id);
  });

  it("refuses a second live stage of the same name in any case, and retiring the last live stage", async () => {
    const { call } = tenant();
    const taken = await call("POST", "/internal/v1/pipeline/stages", { name: "contacted" });
    expect(taken.statusCode).toBe(409);
    const stages = await stagesOf(call);
    for (const stage of stages.slice(1)) {
      expect(
        (await call("PATCH", `/internal/v1/pipeline/stages/${stage.id}`, { retired: true }))
          .statusCode,
      ).toBe(200);
    }
    const last = await call("PATCH", `/internal/v1/pipeline/stages/${stages[0]?.id}`, {
      retired: true,
    });
    expect(last.statusCode).toBe(409);
    expect((await stagesOf(call)).filter((stage) => !stage.retired)).toHaveLength(1);
  });

  it("keeps at most 30 stages, retired ones included", async () => {
    const { call } = tenant();
    for (let i = 0; i < 23; i++) {
      expect(
        (await call("POST", "/internal/v1/pipeline/stages", { name: `Stage ${i}` })).statusCode,
      ).toBe(201);
    }
    const beyond = await call("POST", "/internal/v1/pipeline/stages", { name: "One more" });
    expect(beyond.statusCode).toBe(409);
    expect(await stagesOf(call)).toHaveLength(30);
  });

  it("another tenant's stage answers 404 and is left as it was", async () => {
    const owner = tenant();
    const [stage] = await stagesOf(owner.call);
    const other = tenant();
    const response = await other.call("PATCH", `/internal/v1/pipeline/stages/${stage?.id}`, {
      name: "Mine now",
    });
    expect(response.statusCode).toBe(404);
    expect((await stagesOf(owner.call))[0]?.name).toBe("New");
  });
});

describe("Pipeline items", () => {
  it("keeps the lead as read when added, the first note, tags and follow-up, at version 2", async () => {
    const { call } = tenant();
    const folio = nextFolio();
    const lead = syntheticLead(folio);
    const response = await call("POST", "/internal/v1/pipeline/items", {
      folio,
      lead,
      tags: ["Hot", "hot", "absentee"],
      follow_up_on: "2026-12-01",
      note: "Owner lives in Boston",
      assignee_id: "mem_b",
    });
    expect(response.statusCode).toBe(201);
    const item = response.json();
    expect(item.snapshot).toEqual(lead);
    expect(item).toMatchObject({
      folio,
      tags: ["hot", "absentee"],
      follow_up_on: "2026-12-01",
      assignee_id: "mem_b",
      added_by: "mem_a",
      notes_count: 1,
      version: 2,
      lead: { address: lead.address.formatted, owner_name: lead.owner.name },
    });
    expect(item.notes).toEqual([
      expect.objectContaining({ text: "Owner lives in Boston", author_id: "mem_a" }),
    ]);
    expect(item.stage_id).toBe((await stagesOf(call))[0]?.id);
  });

  it("a folio appears at most once in a tenant's pipeline, even when added many times at once", async () => {
    const { call } = tenant();
    const folio = nextFolio();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        call("POST", "/internal/v1/pipeline/items", { folio, lead: syntheticLead(folio) }),
      ),
    );
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([
      201, 409, 409, 409, 409, 409,
    ]);
    const listed = await call("GET", `/internal/v1/pipeline/items?folio=${folio}`);
    expect(listed.json().data).toHaveLength(1);
    // Another tenant may hold the same parcel.
    const other = tenant();
    expect(
      (
        await other.call("POST", "/internal/v1/pipeline/items", {
          folio,
          lead: syntheticLead(folio),
        })
      ).statusCode,
    ).toBe(201);
  });

  it("a bulk add writes every new folio and names those the pipeline holds", async () => {
    const { call } = tenant();
    const held = await addItem(call);
    const fresh = [nextFolio(), nextFolio()];
    const response = await call("POST", "/internal/v1/pipeline/items/batch", {
      leads: [held.folio, ...fresh].map((folio) => syntheticLead(folio)),
      tags: ["batch"],
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.added.map((item: { folio: string }) => item.folio)).toEqual(fresh);
    expect(body.already_in_pipeline).toEqual([held.folio]);
    expect(body.added[0].tags).toEqual(["batch"]);
  });

  it("refuses an add beyond the pipeline's item cap, a bulk add whole", async () => {
    const { call } = tenant();
    const leads = Array.from({ length: 39 }, () => syntheticLead(nextFolio()));
    expect(
      (await call("POST", "/internal/v1/pipeline/items/batch", { leads: leads.slice(0, 39) }))
        .statusCode,
    ).toBe(200);
    const beyond = await call("POST", "/internal/v1/pipeline/items/batch", {
      leads: [syntheticLead(nextFolio()), syntheticLead(nextFolio())],
    });
    expect(beyond.statusCode).toBe(409);
    const page = await call("GET", "/internal/v1/pipeline/items?limit=200");
    expect(page.json().data).toHaveLength(39);
  });

  it("another tenant's item answers 404 to every operation and is left as it was", async () => {
    const owner = tenant();
    const item = await addItem(owner.call);
    const other = tenant();
    const [stage] = (await stagesOf(other.call)).slice(1);
    const attempts = await Promise.all([
      other.call("GET", `/internal/v1/pipeline/items/${item.id}`),
      other.call("GET", `/internal/v1/pipeline/items/${item.id}/history`),
      other.call("PATCH", `/internal/v1/pipeline/items/${item.id}`, {
        version: item.version,
        note: "mine",
      }),
      other.call("POST", `/internal/v1/pipeline/items/${item.id}/move`, {
        version: item.version,
        stage_id: stage?.id,
      }),
      other.call("DELETE", `/internal/v1/pipeline/items/${item.id}?version=${item.version}`),
    ]);
    expect(attempts.map((attempt) => attempt.statusCode)).toEqual([404, 404, 404, 404, 404]);
    const listed = await other.call("GET", `/internal/v1/pipeline/items?folio=${item.folio}`);
    expect(listed.json().data).toEqual([]);
    const after = (await owner.call("GET", `/internal/v1/pipeline/items/${item.id}`)).json();
    expect(after.version).toBe(item.version);
    expect(await historyOf(owner.call, item.id)).toHaveLength(1);
  });

  it("bad input answers 400 in the error shape and changes nothing", async () => {
    const { call } = tenant();
    const item = await addItem(call);
    const bad = [
      { version: item.version, tags: ["ok", "<script>"] },
      { version: item.version, follow_up_on: "2026-02-30" },
      { version: item.version, note: "" },
      { version: item.version, note: "x".repeat(4001) },
      { version: item.version, tags: Array.from({ length: 21 }, (_, i) => `t${i}`) },
      { version: item.version, unknown: 1, note: "fine" },
      { version: item.version },
      { note: "no version" },
      { version: "1", note: "version as text" },
    ];
    for (const body of bad) {
      const response = await call("PATCH", `/internal/v1/pipeline/items/${item.id}`, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json()).toMatchObject({
        error: "invalid_request",
        detail: expect.any(String),
      });
    }
    const move = await call("POST", `/internal/v1/pipeline/items/${item.id}/move`, {
      version: item.version,
      stage_id: "stg_nope",
    });
    expect(move.statusCode).toBe(400);
    expect(move.json().fields).toEqual([{ path: "body.stage_id", message: expect.any(String) }]);
    const cursor = await call("GET", "/internal/v1/pipeline/items?cursor=WyJ4Il0");
    expect(cursor.statusCode).toBe(400);
    const after = (await call("GET", `/internal/v1/pipeline/items/${item.id}`)).json();
    expect(after).toEqual(item);
    expect(await historyOf(call, item.id)).toHaveLength(1);
  });

  it("a stale version answers 409 and changes nothing", async () => {
    const { call } = tenant();
    const item = await addItem(call);
    const stages = await stagesOf(call);
    const moved = await call("POST", `/internal/v1/pipeline/items/${item.id}/move`, {
      version: item.version,
      stage_id: stages[1]?.id,
    });
    expect(moved.json().version).toBe(item.version + 1);
    for (const [method, url, body] of [
      [
        "POST",
        `/internal/v1/pipeline/items/${item.id}/move`,
        { version: 1, stage_id: stages[2]?.id },
      ],
      ["PATCH", `/internal/v1/pipeline/items/${item.id}`, { version: 1, note: "late" }],
      ["DELETE", `/internal/v1/pipeline/items/${item.id}?version=1`, undefined],
    ] as const) {
      const response = await call(method, url, body);
      expect(response.statusCode, `${method} ${url}`).toBe(409);
      expect(response.json().error).toBe("conflict");
    }
    const after = (await call("GET", `/internal/v1/pipeline/items/${item.id}`)).json();
    expect(after).toMatchObject({ version: 2, stage_id: stages[1]?.id, notes_count: 0 });
  });

  it("two members moving the same card at once: one move lands, the other is told 409, no update lost", async () => {
    const { call, as } = tenant();
    const item = await addItem(call);
    const stages = await stagesOf(call);
    const other = as("mem_b");
    const [a, b] = await Promise.all([
      call("POST", `/internal/v1/pipeline/items/${item.id}/move`, {
        version: item.version,
        stage_id: stages[2]?.id,
      }),
      other("POST", `/internal/v1/pipeline/items/${item.id}/move`, {
        version: item.version,
        stage_id: stages[3]?.id,
      }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
    const winner = a.statusCode === 200 ? a.json() : b.json();
    const history = await historyOf(call, item.id);
    expect(history.map((event: { type: string }) => event.type)).toEqual(["added", "moved"]);
    expect(history[1].stage_id).toBe(winner.stage_id);
  });

  it("keeps at most the configured notes on an item", async () => {
    const { call } = tenant();
    let item = await addItem(call, { note: "first" });
    for (const text of ["second", "third"]) {
      item = (
        await call("PATCH", `/internal/v1/pipeline/items/${item.id}`, {
          version: item.version,
          note: text,
        })
      ).json();
    }
    const fourth = await call("PATCH", `/internal/v1/pipeline/items/${item.id}`, {
      version: item.version,
      note: "fourth",
    });
    expect(fourth.statusCode).toBe(409);
    expect(item.notes.map((note: { text: string }) => note.text)).toEqual([
      "first",
      "second",
      "third",
    ]);
  });

  it("removing an item keeps its history, and the folio may be added again", async () => {
    const { call } = tenant();
    const item = await addItem(call);
    const removed = await call(
      "DELETE",
      `/internal/v1/pipeline/items/${item.id}?version=${item.version}`,
    );
    expect(removed.statusCode).toBe(204);
    expect((await call("GET", `/internal/v1/pipeline/items/${item.id}`)).statusCode).toBe(404);
    const history = await historyOf(call, item.id);
    expect(history.map((event: { type: string }) => event.type)).toEqual(["added", "removed"]);
    const again = await call("POST", "/internal/v1/pipeline/items", {
      folio: item.folio,
      lead: syntheticLead(item.folio),
    });
    expect(again.statusCode).toBe(201);
  });
});

describe("Pipeline history is the event stream", () => {
  it("publishes each change on pipeline.item-changed, and folding the item's events gives the item", async () => {
    const { call, tenantId } = tenant();
    const item = await addItem(call, { note: "hello" });
    const stages = await stagesOf(call);
    let current = (
      await call("POST", `/internal/v1/pipeline/items/${item.id}/move`, {
        version: item.version,
        stage_id: stages[1]?.id,
      })
    ).json();
    current = (
      await call("PATCH", `/internal/v1/pipeline/items/${item.id}`, {
        version: current.version,
        assignee_id: "mem_b",
        tags: ["call-back"],
        follow_up_on: "2026-12-24",
        note: "left a voicemail",
      })
    ).json();
    expect(current.version).toBe(7);
    const history = await historyOf(call, item.id);
    expect(
      history.map((event: { type: string; version: number }) => [event.version, event.type]),
    ).toEqual([
      [1, "added"],
      [2, "noted"],
      [3, "moved"],
      [4, "assigned"],
      [5, "tagged"],
      [6, "follow_up_set"],
      [7, "noted"],
    ]);

    const received: PipelineItemChanged[] = [];
    const consumer = await harness.bus.consume({
      group: `test.pipeline.${tenantId}`,
      fromBeginning: true,
      subscriptions: [
        on(contracts.pipelineItemChanged, async ({ value }) => {
          if (value.item_id === item.id) {
            received.push(value);
          }
          return done;
        }),
      ],
    });
    await app.flushOutbox();
    const deadline = Date.now() + 20_000;
    while (received.length < 7 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await consumer.stop();
    const ordered = [...received].sort((x, y) => x.version - y.version);
    expect(ordered.map((event) => event.event_id)).toEqual(
      history.map((event: { id: string }) => event.id),
    );
    expect(ordered[0]?.lead_snapshot && JSON.parse(ordered[0].lead_snapshot)).toEqual(
      current.snapshot,
    );
    const state = foldEvents(ordered);
    expect(state).toMatchObject({
      stageId: current.stage_id,
      assigneeId: current.assignee_id,
      tags: current.tags,
      followUpOn: current.follow_up_on,
      notesCount: current.notes_count,
      version: current.version,
    });
  });
});

describe("Pipeline listing", () => {
  it("filters by stage, assignee, tag, follow-up due and text, and pages every item once in each sort", async () => {
    const { call } = tenant();
    const stages = await stagesOf(call);
    const made: { id: string; lead: { owner_name: string } }[] = [];
    for (let i = 0; i < 12; i++) {
      made.push(
        await addItem(call, {
          stage_id: stages[i % 3]?.id,
          assignee_id: i % 2 === 0 ? "mem_b" : null,
          tags: i % 4 === 0 ? ["hot"] : [],
          follow_up_on: i % 3 === 0 ? `2026-12-${String(10 + i).padStart(2, "0")}` : null,
        }),
      );
    }
    const ids = async (query: string) =>
      (await call("GET", `/internal/v1/pipeline/items?${query}`))
        .json()
        .data.map((item: { id: string }) => item.id)
        .sort();
    const expected = (keep: (item: (typeof made)[number], index: number) => boolean) =>
      made
        .filter(keep)
        .map((item) => item.id)
        .sort();
    expect(await ids(`stage_id=${stages[1]?.id}`)).toEqual(expected((_, i) => i % 3 === 1));
    expect(await ids("assignee_id=mem_b")).toEqual(expected((_, i) => i % 2 === 0));
    expect(await ids("assignee_id=none")).toEqual(expected((_, i) => i % 2 === 1));
    expect(await ids("tag=HOT")).toEqual(expected((_, i) => i % 4 === 0));
    expect(await ids("follow_up_due=2026-12-16")).toEqual(
      expected((_, i) => i === 0 || i === 3 || i === 6),
    );
    const sixth = made[5] as (typeof made)[number];
    expect(await ids(`q=${encodeURIComponent(sixth.lead.owner_name.toLowerCase())}`)).toEqual([
      sixth.id,
    ]);
    expect(await ids("q=%25%25")).toEqual([]);
    for (const sort of [
      "-updated_at",
      "updated_at",
      "added_at",
      "-added_at",
      "follow_up_on",
      "-follow_up_on",
    ]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { data: { id: string }[]; next_cursor: string | null } = (
          await call(
            "GET",
            `/internal/v1/pipeline/items?limit=5&sort=${sort}${cursor ? `&cursor=${cursor}` : ""}`,
          )
        ).json();
        seen.push(...page.data.map((item: { id: string }) => item.id));
        cursor = page.next_cursor;
      } while (cursor !== null);
      expect(seen.length, sort).toBe(12);
      expect(new Set(seen).size, sort).toBe(12);
    }
    const dueFirst = (
      await call("GET", "/internal/v1/pipeline/items?sort=follow_up_on&limit=1")
    ).json();
    expect(dueFirst.data[0].id).toBe(made[0]?.id);
  });

  it("a cursor issued for one sort is refused under another", async () => {
    const { call } = tenant();
    await addItem(call);
    await addItem(call);
    const page = (await call("GET", "/internal/v1/pipeline/items?limit=1")).json();
    const other = await call(
      "GET",
      `/internal/v1/pipeline/items?limit=1&sort=follow_up_on&cursor=${page.next_cursor}`,
    );
    expect(other.statusCode).toBe(400);
  });
});
