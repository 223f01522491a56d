// A pipeline item is the fold of its events: `pipeline.item-changed` carries each change, and
// the item's row is what folding them gives. The changes a request asks for become events here;
// nothing in this file does I/O.
import type { Lead, PipelineLeadSummary } from "@th/api-schemas";
import type { PipelineItemChanged } from "@th/contracts";
import { newId } from "./ids.ts";

/** An item's current state, as folding its events gives it. */
export interface ItemState {
  tenantId: string;
  id: string;
  folio: string;
  stageId: string;
  assigneeId: string | null;
  tags: string[];
  followUpOn: string | null;
  notesCount: number;
  version: number;
  addedBy: string;
  addedAt: string;
  updatedAt: string;
  removed: boolean;
}

/** Who makes a change, and when. */
export interface Actor {
  tenantId: string;
  memberId: string;
  /** The API key it came through; null from a dashboard session. */
  keyId: string | null;
  at: string;
}

/** The fields an item starts with besides its lead. */
export interface ItemStart {
  stageId: string;
  assigneeId: string | null;
  tags: string[];
  followUpOn: string | null;
  note?: string | undefined;
}

/** The changes an update asks for; a field left out is left as it is. */
export interface ItemUpdate {
  assignee_id?: string | null | undefined;
  tags?: string[] | undefined;
  follow_up_on?: string | null | undefined;
  note?: string | undefined;
}

const EMPTY_CHANGE = {
  stage_id: null,
  from_stage_id: null,
  assignee_id: null,
  tags: null,
  follow_up_on: null,
  note_id: null,
  note_text: null,
  lead_snapshot: null,
} as const;

function eventOf(
  item: { id: string; folio: string },
  actor: Actor,
  version: number,
  change: Partial<PipelineItemChanged> & Pick<PipelineItemChanged, "type">,
): PipelineItemChanged {
  return {
    ...EMPTY_CHANGE,
    event_id: newId("ple"),
    tenant_id: actor.tenantId,
    item_id: item.id,
    folio: item.folio,
    version,
    member_id: actor.memberId,
    key_id: actor.keyId,
    occurred_at: actor.at,
    ...change,
  };
}

/** Tags as a set: each once, in the order first given. */
function tagSet(tags: readonly string[]): string[] {
  return [...new Set(tags)];
}

/**
 * The events of adding a parcel: the add itself (version 1, carrying the snapshot and the
 * starting fields), then a first note if one was given.
 */
export function addEvents(
  lead: Lead,
  snapshot: string,
  start: ItemStart,
  actor: Actor,
): PipelineItemChanged[] {
  const item = { id: newId("pli"), folio: lead.folio };
  const events = [
    eventOf(item, actor, 1, {
      type: "added",
      stage_id: start.stageId,
      assignee_id: start.assigneeId,
      tags: tagSet(start.tags),
      follow_up_on: start.followUpOn,
      lead_snapshot: snapshot,
    }),
  ];
  if (start.note !== undefined) {
    events.push(eventOf(item, actor, 2, noteChange(start.note)));
  }
  return events;
}

function noteChange(text: string) {
  return { type: "noted" as const, note_id: newId("note"), note_text: text };
}

function sameTags(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((tag, index) => tag === b[index]);
}

/**
 * The events an update makes, one per field that really changes, each one version after the
 * last; asking for what the item already has makes none.
 */
export function updateEvents(
  item: ItemState,
  update: ItemUpdate,
  actor: Actor,
): PipelineItemChanged[] {
  const changes: (Partial<PipelineItemChanged> & Pick<PipelineItemChanged, "type">)[] = [];
  if (update.assignee_id !== undefined && update.assignee_id !== item.assigneeId) {
    changes.push({ type: "assigned", assignee_id: update.assignee_id });
  }
  const tags = update.tags === undefined ? undefined : tagSet(update.tags);
  if (tags !== undefined && !sameTags(tags, item.tags)) {
    changes.push({ type: "tagged", tags });
  }
  if (update.follow_up_on !== undefined && update.follow_up_on !== item.followUpOn) {
    changes.push({ type: "follow_up_set", follow_up_on: update.follow_up_on });
  }
  if (update.note !== undefined) {
    changes.push(noteChange(update.note));
  }
  return changes.map((change, index) => eventOf(item, actor, item.version + index + 1, change));
}

/** The event of moving an item to another stage; none when it is there already. */
export function moveEvents(item: ItemState, stageId: string, actor: Actor): PipelineItemChanged[] {
  if (stageId === item.stageId) {
    return [];
  }
  return [
    eventOf(item, actor, item.version + 1, {
      type: "moved",
      from_stage_id: item.stageId,
      stage_id: stageId,
    }),
  ];
}

/** The event of taking an item off the pipeline. */
export function removeEvent(item: ItemState, actor: Actor): PipelineItemChanged {
  return eventOf(item, actor, item.version + 1, { type: "removed" });
}

/**
 * The item after one more event. An event whose version is not the next one is a fault of
 * whoever wrote the stream, never skipped silently.
 */
export function applyEvent(state: ItemState | undefined, event: PipelineItemChanged): ItemState {
  if (event.type === "added") {
    if (state !== undefined || event.version !== 1) {
      throw new Error(`item ${event.item_id}: an add must be its first event, at version 1`);
    }
    return {
      tenantId: event.tenant_id,
      id: event.item_id,
      folio: event.folio,
      stageId: event.stage_id ?? "",
      assigneeId: event.assignee_id,
      tags: event.tags ?? [],
      followUpOn: event.follow_up_on,
      notesCount: 0,
      version: 1,
      addedBy: event.member_id,
      addedAt: event.occurred_at,
      updatedAt: event.occurred_at,
      removed: false,
    };
  }
  if (state === undefined || event.version !== state.version + 1 || state.removed) {
    throw new Error(`item ${event.item_id}: event version ${event.version} does not follow`);
  }
  const next = { ...state, version: event.version, updatedAt: event.occurred_at };
  switch (event.type) {
    case "moved":
      return { ...next, stageId: event.stage_id ?? state.stageId };
    case "assigned":
      return { ...next, assigneeId: event.assignee_id };
    case "tagged":
      return { ...next, tags: event.tags ?? [] };
    case "follow_up_set":
      return { ...next, followUpOn: event.follow_up_on };
    case "noted":
      return { ...next, notesCount: state.notesCount + 1 };
    case "removed":
      return { ...next, removed: true };
    default:
      return next;
  }
}

/** Folds an item's events, in version order, into the item. */
export function foldEvents(events: readonly PipelineItemChanged[]): ItemState | undefined {
  return events.reduce<ItemState | undefined>(applyEvent, undefined);
}

/** What the list and the board show of a lead, from its snapshot. */
export function leadSummary(lead: Lead): PipelineLeadSummary {
  return {
    address: lead.address.formatted,
    city: lead.address.city,
    owner_name: lead.owner.name,
    just_value: lead.valuation.just_value,
    est_equity: lead.valuation.est_equity,
    use_class: lead.land_use.use_class,
    signals_fired: lead.signals_fired,
  };
}

/** The text the listing's `q` searches: folio, address and owner, in lower case. */
export function searchTextOf(lead: Lead): string {
  return [lead.folio, lead.address.formatted, lead.owner.name].join("\n").toLowerCase();
}

/** The event as the history shows it. */
export function historyEntry(event: PipelineItemChanged) {
  return {
    id: event.event_id,
    item_id: event.item_id,
    version: event.version,
    type: event.type,
    member_id: event.member_id,
    occurred_at: event.occurred_at,
    stage_id: event.stage_id,
    from_stage_id: event.from_stage_id,
    assignee_id: event.assignee_id,
    tags: event.tags,
    follow_up_on: event.follow_up_on,
    note:
      event.note_id !== null && event.note_text !== null
        ? { id: event.note_id, text: event.note_text }
        : null,
  };
}
