import type { PipelineItemChanged } from "@th/contracts";
import { describe, expect, it } from "vitest";
import { syntheticLead } from "../testing/leads.ts";
import {
  type Actor,
  addEvents,
  applyEvent,
  foldEvents,
  moveEvents,
  removeEvent,
  updateEvents,
} from "./items.ts";

const actor: Actor = {
  tenantId: "ten_1",
  memberId: "mem_a",
  keyId: null,
  at: "2026-11-21T12:00:00.000Z",
};
const start = { stageId: "stg_new", assigneeId: null, tags: [], followUpOn: null };

function added() {
  const lead = syntheticLead("23-0101");
  const events = addEvents(lead, JSON.stringify(lead), { ...start, note: "first" }, actor);
  const state = foldEvents(events);
  if (!state) {
    throw new Error("no state");
  }
  return { events, state };
}

describe("an item is the fold of its events", () => {
  it("starts at version 1 with the add, a first note one version later", () => {
    const { events, state } = added();
    expect(events.map((event) => [event.version, event.type])).toEqual([
      [1, "added"],
      [2, "noted"],
    ]);
    expect(events[0]?.lead_snapshot).toContain("23-0101");
    expect(state).toMatchObject({
      version: 2,
      notesCount: 1,
      stageId: "stg_new",
      addedBy: "mem_a",
    });
  });

  it("makes one event per field that really changes, none for what the item already has", () => {
    const { state } = added();
    expect(updateEvents(state, { assignee_id: null, tags: [], follow_up_on: null }, actor)).toEqual(
      [],
    );
    const events = updateEvents(
      state,
      { assignee_id: "mem_b", tags: ["hot"], follow_up_on: "2026-12-01", note: "x" },
      actor,
    );
    expect(events.map((event) => [event.version, event.type])).toEqual([
      [3, "assigned"],
      [4, "tagged"],
      [5, "follow_up_set"],
      [6, "noted"],
    ]);
    const next = events.reduce(applyEvent, state);
    expect(next).toMatchObject({
      assigneeId: "mem_b",
      tags: ["hot"],
      followUpOn: "2026-12-01",
      notesCount: 2,
      version: 6,
    });
  });

  it("moves to the same stage make no event; a move records where it came from", () => {
    const { state } = added();
    expect(moveEvents(state, "stg_new", actor)).toEqual([]);
    const [move] = moveEvents(state, "stg_won", actor);
    expect(move).toMatchObject({
      type: "moved",
      from_stage_id: "stg_new",
      stage_id: "stg_won",
      version: 3,
    });
  });

  it("refuses an event that does not follow the last version, or any after the removal", () => {
    const { events, state } = added();
    const noted = events[1] as PipelineItemChanged;
    expect(() => applyEvent(state, { ...noted, version: 5 })).toThrow(/does not follow/);
    expect(() => applyEvent(undefined, events[1] as never)).toThrow(/does not follow/);
    expect(() => applyEvent(state, events[0] as never)).toThrow(/first event/);
    const removed = applyEvent(state, removeEvent(state, actor));
    expect(removed.removed).toBe(true);
    const [late] = moveEvents(removed, "stg_won", actor);
    expect(() => applyEvent(removed, late as never)).toThrow(/does not follow/);
  });
});
