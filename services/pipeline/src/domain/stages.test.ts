import { describe, expect, it } from "vitest";
import {
  defaultStages,
  refuseStageChange,
  reordered,
  stageChangeTypes,
  withNewStage,
} from "./stages.ts";

const at = "2026-11-21T12:00:00.000Z";

describe("stages", () => {
  it("moves a stage to a place and numbers every stage again from 0, clamping past the end", () => {
    const stages = defaultStages(at);
    const won = stages[5]?.id ?? "";
    const moved = reordered(stages, won, 0);
    expect(moved.map((stage) => stage.name).slice(0, 2)).toEqual(["Closed won", "New"]);
    expect(moved.map((stage) => stage.position)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(reordered(stages, stages[0]?.id ?? "", 99).at(-1)?.name).toBe("New");
  });

  it("inserts a new stage where asked, or last", () => {
    const stages = defaultStages(at);
    expect(withNewStage(stages, "Appointment", 1, at).stages.map((stage) => stage.name)[1]).toBe(
      "Appointment",
    );
    expect(withNewStage(stages, "Archive", undefined, at).created.position).toBe(7);
  });

  it("refuses a live name taken in any case, and retiring the last live stage", () => {
    const stages = defaultStages(at);
    const [first, second] = stages;
    if (!first || !second) {
      throw new Error("no stages");
    }
    expect(refuseStageChange(stages, second, { name: "NEW" })?.code).toBe("conflict");
    expect(refuseStageChange(stages, second, { name: "Called" })).toBeUndefined();
    const oneLive = stages.map((stage, index) => ({ ...stage, retired: index > 0 }));
    expect(refuseStageChange(oneLive, first, { retired: true })?.code).toBe("conflict");
    // A retired stage may take a name, but coming back under a live one's name is refused.
    const retiredSecond = { ...second, retired: true };
    expect(refuseStageChange(stages, retiredSecond, { name: "New" })).toBeUndefined();
    expect(refuseStageChange(stages, retiredSecond, { name: "New", retired: false })?.code).toBe(
      "conflict",
    );
  });

  it("names each kind of change a stage went through", () => {
    const [stage] = defaultStages(at);
    if (!stage) {
      throw new Error("no stage");
    }
    expect(
      stageChangeTypes(stage, { ...stage, name: "Fresh", position: 3, retired: true }),
    ).toEqual(["renamed", "reordered", "retired"]);
  });
});
