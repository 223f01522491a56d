// A tenant's stages: the defaults it starts with, and the rules of adding, renaming, reordering
// and retiring them. Nothing here does I/O.
import type { PipelineStageChanged, PipelineStageChangeType } from "@th/contracts";
import { newId } from "./ids.ts";

const DEFAULT_STAGES = [
  "New",
  "Contacted",
  "Follow-up",
  "Offer made",
  "Under contract",
  "Closed won",
  "Closed lost",
] as const;

export interface Stage {
  id: string;
  name: string;
  position: number;
  retired: boolean;
  createdAt: string;
}

/** A stage as the API shows it. */
export function stageView(stage: Stage) {
  return {
    id: stage.id,
    name: stage.name,
    position: stage.position,
    retired: stage.retired,
    created_at: stage.createdAt,
  };
}

/** A tenant's first stages, in board order. */
export function defaultStages(at: string): Stage[] {
  return DEFAULT_STAGES.map((name, position) => ({
    id: newId("stg"),
    name,
    position,
    retired: false,
    createdAt: at,
  }));
}

/** Why a stage change is refused, or undefined when it may go ahead. */
export type StageRefusal = { code: "conflict" | "not_found"; detail: string } | undefined;

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** A live stage other than `except` already has this name. */
export function nameTaken(stages: readonly Stage[], name: string, except?: string): boolean {
  return stages.some(
    (stage) => !stage.retired && stage.id !== except && sameName(stage.name, name),
  );
}

/**
 * The stages in board order with `id` moved to `position` (clamped to the end), numbered again
 * from 0.
 */
export function reordered(stages: readonly Stage[], id: string, position: number): Stage[] {
  const ordered = [...stages].sort((a, b) => a.position - b.position);
  const from = ordered.findIndex((stage) => stage.id === id);
  const [moving] = from === -1 ? [] : ordered.splice(from, 1);
  if (moving !== undefined) {
    ordered.splice(Math.min(position, ordered.length), 0, moving);
  }
  return ordered.map((stage, index) => ({ ...stage, position: index }));
}

/** A new stage inserted at `position` (the end when not given), the others renumbered. */
export function withNewStage(
  stages: readonly Stage[],
  name: string,
  position: number | undefined,
  at: string,
): { stages: Stage[]; created: Stage } {
  const created: Stage = {
    id: newId("stg"),
    name,
    position: stages.length,
    retired: false,
    createdAt: at,
  };
  const all = reordered([...stages, created], created.id, position ?? stages.length);
  return { stages: all, created: all.find((stage) => stage.id === created.id) ?? created };
}

/** Why a change of `stage` is refused: a name another live stage has, or the last live stage retired. */
export function refuseStageChange(
  stages: readonly Stage[],
  stage: Stage,
  change: { name?: string | undefined; retired?: boolean | undefined },
): StageRefusal {
  const name = change.name ?? stage.name;
  const retired = change.retired ?? stage.retired;
  if (!retired && nameTaken(stages, name, stage.id)) {
    return { code: "conflict", detail: `a live stage is already named ${name}` };
  }
  if (retired && !stage.retired && stages.filter((each) => !each.retired).length <= 1) {
    return { code: "conflict", detail: "the last live stage cannot be retired" };
  }
  return undefined;
}

/** The event that tells of a stage as it is after a change. */
export function stageEvent(
  tenantId: string,
  stage: Stage,
  type: PipelineStageChangeType,
  memberId: string | null,
  at: string,
): PipelineStageChanged {
  return {
    event_id: newId("pse"),
    tenant_id: tenantId,
    stage_id: stage.id,
    type,
    name: stage.name,
    position: stage.position,
    retired: stage.retired,
    member_id: memberId,
    occurred_at: at,
  };
}

/** Which kinds of change turn `before` into `after`. */
export function stageChangeTypes(before: Stage, after: Stage): PipelineStageChangeType[] {
  const types: PipelineStageChangeType[] = [];
  if (before.name !== after.name) {
    types.push("renamed");
  }
  if (before.position !== after.position) {
    types.push("reordered");
  }
  if (before.retired !== after.retired) {
    types.push(after.retired ? "retired" : "restored");
  }
  return types;
}
