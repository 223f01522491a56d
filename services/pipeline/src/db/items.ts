// Changes of items. Each runs in one transaction that locks the item, checks the version the
// client read, appends the change's events to the item's stream (item_events), writes the fold
// of them into the item's row and queues them for pipeline.item-changed through the outbox.
import type { Lead } from "@th/api-schemas";
import { contracts, type PipelineItemChanged } from "@th/contracts";
import { inTransaction, type Pool, type PoolClient } from "@th/db";
import { ApiError, enqueueEvent } from "@th/service-kit";
import {
  type Actor,
  addEvents,
  applyEvent,
  type ItemStart,
  type ItemState,
  type ItemUpdate,
  leadSummary,
  moveEvents,
  removeEvent,
  searchTextOf,
  updateEvents,
} from "../domain/items.ts";
import type { Stage } from "../domain/stages.ts";
import { readStages, stagesWithDefaults } from "./stages.ts";

interface ItemRow {
  tenant_id: string;
  id: string;
  folio: string;
  stage_id: string;
  assignee_id: string | null;
  tags: string[];
  follow_up_on: string | null;
  notes_count: number;
  version: number;
  added_by: string;
  added_at: Date;
  updated_at: Date;
}

/** The columns of an item's state, its follow-up day as text (a `date` would shift by zone). */
const STATE_COLUMNS =
  "tenant_id, id, folio, stage_id, assignee_id, tags, follow_up_on::text AS follow_up_on, notes_count, version, added_by, added_at, updated_at";

function stateOf(row: ItemRow): ItemState {
  return {
    tenantId: row.tenant_id,
    id: row.id,
    folio: row.folio,
    stageId: row.stage_id,
    assigneeId: row.assignee_id,
    tags: row.tags,
    followUpOn: row.follow_up_on,
    notesCount: row.notes_count,
    version: row.version,
    addedBy: row.added_by,
    addedAt: row.added_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    removed: false,
  };
}

/** Appends events to their items' streams and queues them for the topic, in version order. */
async function appendEvents(client: PoolClient, events: readonly PipelineItemChanged[]) {
  if (events.length === 0) {
    return;
  }
  // The snapshot is kept once, on the item; the stream's copy of the add leaves it out.
  await client.query(
    `INSERT INTO item_events (tenant_id, item_id, version, event_id, type, occurred_at, event)
     SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::timestamptz[], $7::jsonb[])`,
    [
      events.map((event) => event.tenant_id),
      events.map((event) => event.item_id),
      events.map((event) => event.version),
      events.map((event) => event.event_id),
      events.map((event) => event.type),
      events.map((event) => event.occurred_at),
      events.map((event) => JSON.stringify({ ...event, lead_snapshot: null })),
    ],
  );
  for (const event of events) {
    await enqueueEvent(client, contracts.pipelineItemChanged, event);
  }
}

/** Writes an item's row as its state now is. */
async function writeState(client: PoolClient, state: ItemState): Promise<void> {
  await client.query(
    `UPDATE items SET stage_id = $3, assignee_id = $4, tags = $5, follow_up_on = $6::date,
       notes_count = $7, version = $8, updated_at = $9
     WHERE tenant_id = $1 AND id = $2`,
    [
      state.tenantId,
      state.id,
      state.stageId,
      state.assigneeId,
      state.tags,
      state.followUpOn,
      state.notesCount,
      state.version,
      state.updatedAt,
    ],
  );
}

/** The item, locked for a change at the version the client read: 404, or 409 when stale. */
async function lockAtVersion(
  client: PoolClient,
  tenantId: string,
  itemId: string,
  version: number,
): Promise<ItemState> {
  const { rows } = await client.query<ItemRow>(
    `SELECT ${STATE_COLUMNS} FROM items WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
    [tenantId, itemId],
  );
  const row = rows[0];
  if (row === undefined) {
    throw new ApiError("not_found", `no pipeline item ${itemId}`);
  }
  if (row.version !== version) {
    throw new ApiError(
      "conflict",
      `the item changed since version ${version} was read: it is at version ${row.version}; read it again and retry`,
    );
  }
  return stateOf(row);
}

/** A live stage of the tenant's, or the first live one when none is named. */
function stageFor(stages: readonly Stage[], stageId: string | undefined): Stage {
  const stage =
    stageId === undefined
      ? stages.find((each) => !each.retired)
      : stages.find((each) => each.id === stageId);
  if (stage === undefined) {
    throw new ApiError(
      "invalid_request",
      "invalid body: stage_id names no stage of this pipeline",
      {
        fields: [{ path: "body.stage_id", message: "names no stage of this pipeline" }],
      },
    );
  }
  if (stage.retired) {
    throw new ApiError("conflict", `the stage ${stage.name} is retired and takes no new items`);
  }
  return stage;
}

/** Applies events to a state in order. */
function folded(state: ItemState, events: readonly PipelineItemChanged[]): ItemState {
  return events.reduce<ItemState>(applyEvent, state);
}

export interface NewItemFields extends Omit<ItemStart, "stageId"> {
  stageId?: string | undefined;
}

export function createItemStore(pool: Pool, limits: { maxItems: number; maxNotes: number }) {
  /** Inserts an item's row unless the folio is in the pipeline already. */
  async function insertItem(client: PoolClient, lead: Lead, events: PipelineItemChanged[]) {
    const state = events.reduce<ItemState | undefined>(applyEvent, undefined) as ItemState;
    const { rowCount } = await client.query(
      `INSERT INTO items (tenant_id, id, folio, stage_id, assignee_id, tags, follow_up_on,
         notes_count, version, added_by, added_at, updated_at, lead, snapshot, search_text)
       VALUES ($1, $2, $3, $4, $5, $6, $7::date, $8, $9, $10, $11, $12, $13, $14, $15)
       ON CONFLICT (tenant_id, folio) DO NOTHING`,
      [
        state.tenantId,
        state.id,
        state.folio,
        state.stageId,
        state.assigneeId,
        state.tags,
        state.followUpOn,
        state.notesCount,
        state.version,
        state.addedBy,
        state.addedAt,
        state.updatedAt,
        JSON.stringify(leadSummary(lead)),
        events[0]?.lead_snapshot ?? JSON.stringify(lead),
        searchTextOf(lead),
      ],
    );
    if ((rowCount ?? 0) === 0) {
      return undefined;
    }
    await appendEvents(client, events);
    return state;
  }

  async function refuseBeyondCap(client: PoolClient, tenantId: string, adding: number) {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM items WHERE tenant_id = $1",
      [tenantId],
    );
    if ((rows[0]?.n ?? 0) + adding > limits.maxItems) {
      throw new ApiError(
        "conflict",
        `a pipeline holds at most ${limits.maxItems} items; remove some before adding more`,
      );
    }
  }

  return {
    /**
     * Adds parcels, each with the lead as read; a folio already in the pipeline is left as it
     * is and named in `already`.
     */
    async add(actor: Actor, leads: readonly Lead[], fields: NewItemFields) {
      return inTransaction(pool, async (client) => {
        const stages = await stagesWithDefaults(client, actor.tenantId, "");
        const stage = stageFor(stages, fields.stageId);
        await refuseBeyondCap(client, actor.tenantId, leads.length);
        const added: ItemState[] = [];
        const already: string[] = [];
        for (const lead of leads) {
          const events = addEvents(
            lead,
            JSON.stringify(lead),
            { ...fields, stageId: stage.id },
            actor,
          );
          const state = await insertItem(client, lead, events);
          if (state === undefined) {
            already.push(lead.folio);
          } else {
            added.push(state);
          }
        }
        return { added, already };
      });
    },

    /** Assigns, tags, sets the follow-up or appends a note, at the version read. */
    async update(actor: Actor, itemId: string, version: number, update: ItemUpdate) {
      return inTransaction(pool, async (client) => {
        const state = await lockAtVersion(client, actor.tenantId, itemId, version);
        if (update.note !== undefined && state.notesCount >= limits.maxNotes) {
          throw new ApiError("conflict", `an item keeps at most ${limits.maxNotes} notes`);
        }
        const events = updateEvents(state, update, actor);
        const next = folded(state, events);
        await appendEvents(client, events);
        await writeState(client, next);
        return next;
      });
    },

    /**
     * Moves an item to a live stage, at the version read. The stages are read, not locked: a
     * share lock taken by every move of a tenant would make each one write the stage rows. A move
     * that commits as its stage is retired lands there, readable and movable out like the rest.
     */
    async move(actor: Actor, itemId: string, version: number, stageId: string) {
      return inTransaction(pool, async (client) => {
        const stages = await readStages(client, actor.tenantId);
        const state = await lockAtVersion(client, actor.tenantId, itemId, version);
        const events = moveEvents(state, stageFor(stages, stageId).id, actor);
        const next = folded(state, events);
        await appendEvents(client, events);
        await writeState(client, next);
        return next;
      });
    },

    /** Takes an item off the pipeline, at the version read; its events stay. */
    async remove(actor: Actor, itemId: string, version: number) {
      await inTransaction(pool, async (client) => {
        const state = await lockAtVersion(client, actor.tenantId, itemId, version);
        await appendEvents(client, [removeEvent(state, actor)]);
        await client.query("DELETE FROM items WHERE tenant_id = $1 AND id = $2", [
          actor.tenantId,
          itemId,
        ]);
      });
    },
  };
}

export type ItemStore = ReturnType<typeof createItemStore>;
