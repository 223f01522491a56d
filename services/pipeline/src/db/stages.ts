// A tenant's stages. Each change locks the tenant's stages, so reorders and retirements of one
// tenant happen one at a time, and sends its events with it through the outbox.
import { contracts } from "@th/contracts";
import { inTransaction, type Pool, type PoolClient } from "@th/db";
import { ApiError, enqueueEvent } from "@th/service-kit";
import {
  defaultStages,
  nameTaken,
  refuseStageChange,
  reordered,
  type Stage,
  stageChangeTypes,
  stageEvent,
  withNewStage,
} from "../domain/stages.ts";

type Queryable = Pick<PoolClient, "query">;

interface StageRow {
  id: string;
  name: string;
  position: number;
  retired: boolean;
  created_at: Date;
}

function stageOf(row: StageRow): Stage {
  return {
    id: row.id,
    name: row.name,
    position: row.position,
    retired: row.retired,
    createdAt: row.created_at.toISOString(),
  };
}

/** The tenant's stages in board order; `lock` locks them for a change. */
export async function readStages(
  client: Queryable,
  tenantId: string,
  lock: "" | "FOR SHARE" | "FOR UPDATE" = "",
): Promise<Stage[]> {
  const { rows } = await client.query<StageRow>(
    `SELECT id, name, position, retired, created_at FROM stages WHERE tenant_id = $1 ORDER BY position, id ${lock}`,
    [tenantId],
  );
  return rows.map(stageOf);
}

async function writeStage(client: Queryable, tenantId: string, stage: Stage): Promise<boolean> {
  const { rowCount } = await client.query(
    `INSERT INTO stages (tenant_id, id, name, position, retired, created_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, id) DO UPDATE
       SET name = excluded.name, position = excluded.position, retired = excluded.retired`,
    [tenantId, stage.id, stage.name, stage.position, stage.retired, stage.createdAt],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * The tenant's stages, the defaults written first for a tenant that has none yet. Two first
 * reads at once may both try: the live-name index lets one set in, the other's rows are skipped.
 */
export async function stagesWithDefaults(
  client: Queryable,
  tenantId: string,
  lock: "" | "FOR SHARE" | "FOR UPDATE",
): Promise<Stage[]> {
  const stages = await readStages(client, tenantId, lock);
  if (stages.length > 0) {
    return stages;
  }
  const at = new Date().toISOString();
  for (const stage of defaultStages(at)) {
    const { rowCount } = await client.query(
      `INSERT INTO stages (tenant_id, id, name, position, retired, created_at)
       VALUES ($1, $2, $3, $4, false, $5)
       ON CONFLICT (tenant_id, lower(name)) WHERE NOT retired DO NOTHING`,
      [tenantId, stage.id, stage.name, stage.position, stage.createdAt],
    );
    if ((rowCount ?? 0) > 0) {
      await enqueueEvent(
        client as PoolClient,
        contracts.pipelineStageChanged,
        stageEvent(tenantId, stage, "created", null, at),
      );
    }
  }
  return readStages(client, tenantId, lock);
}

export interface StageActor {
  tenantId: string;
  memberId: string;
}

function refused(refusal: { code: "conflict" | "not_found"; detail: string }): ApiError {
  return new ApiError(refusal.code, refusal.detail);
}

/** Writes the stages that differ from before, each with its events. */
async function writeChanged(
  client: PoolClient,
  actor: StageActor,
  before: readonly Stage[],
  after: readonly Stage[],
  at: string,
): Promise<void> {
  const old = new Map(before.map((stage) => [stage.id, stage]));
  for (const stage of after) {
    const previous = old.get(stage.id);
    const types =
      previous === undefined ? (["created"] as const) : stageChangeTypes(previous, stage);
    if (types.length === 0) {
      continue;
    }
    await writeStage(client, actor.tenantId, stage);
    for (const type of types) {
      await enqueueEvent(
        client,
        contracts.pipelineStageChanged,
        stageEvent(actor.tenantId, stage, type, actor.memberId, at),
      );
    }
  }
}

export function createStageStore(pool: Pool, limits: { maxStages: number }) {
  return {
    async list(tenantId: string): Promise<Stage[]> {
      const stages = await readStages(pool, tenantId);
      if (stages.length > 0) {
        return stages;
      }
      return inTransaction(pool, (client) => stagesWithDefaults(client, tenantId, ""));
    },

    /** Adds a stage at `position` (the end when not given). */
    async create(actor: StageActor, input: { name: string; position?: number | undefined }) {
      return inTransaction(pool, async (client) => {
        const stages = await stagesWithDefaults(client, actor.tenantId, "FOR UPDATE");
        if (stages.length >= limits.maxStages) {
          throw new ApiError(
            "conflict",
            `a pipeline keeps at most ${limits.maxStages} stages, retired ones included`,
          );
        }
        if (nameTaken(stages, input.name)) {
          throw new ApiError("conflict", `a live stage is already named ${input.name}`);
        }
        const at = new Date().toISOString();
        const next = withNewStage(stages, input.name, input.position, at);
        await writeChanged(client, actor, stages, next.stages, at);
        return next.created;
      });
    },

    /** Renames, moves, retires or brings back a stage. */
    async update(
      actor: StageActor,
      stageId: string,
      change: {
        name?: string | undefined;
        position?: number | undefined;
        retired?: boolean | undefined;
      },
    ) {
      return inTransaction(pool, async (client) => {
        const stages = await stagesWithDefaults(client, actor.tenantId, "FOR UPDATE");
        const stage = stages.find((each) => each.id === stageId);
        if (stage === undefined) {
          throw new ApiError("not_found", `no stage ${stageId}`);
        }
        const refusal = refuseStageChange(stages, stage, change);
        if (refusal !== undefined) {
          throw refused(refusal);
        }
        const changed = stages.map((each) =>
          each.id === stageId
            ? { ...each, name: change.name ?? each.name, retired: change.retired ?? each.retired }
            : each,
        );
        const next =
          change.position === undefined ? changed : reordered(changed, stageId, change.position);
        await writeChanged(client, actor, stages, next, new Date().toISOString());
        return next.find((each) => each.id === stageId) ?? stage;
      });
    },
  };
}

export type StageStore = ReturnType<typeof createStageStore>;
