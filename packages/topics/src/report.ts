// What `npm run topics` prints: one line per difference, then what --apply does or left.
import { isApplicable, type TopicDifference } from "@th/bus";
import type { TopicPlanEntry } from "@th/contracts";

function configsOf(entry: TopicPlanEntry): string {
  return Object.entries(entry.configs)
    .map(([name, value]) => `${name}=${value}`)
    .join(" ");
}

/**
 * One line for a difference; `+` and `~` are what --apply does (in the past tense once `done`),
 * `!` what it leaves.
 */
function describeDifference(difference: TopicDifference, done = false): string {
  switch (difference.kind) {
    case "missing":
      return `${done ? "+ created" : "+ create"} ${difference.topic}: ${plural(difference.entry.partitions, "partition")}, replication factor ${difference.entry.replicationFactor}, ${configsOf(difference.entry)}`;
    case "partitions":
      return difference.actual < difference.planned
        ? `${done ? "~ grew" : "~ grow"} ${difference.topic}: ${difference.actual} -> ${difference.planned} partitions`
        : `! ${difference.topic}: ${difference.actual} partitions, the plan has ${difference.planned} (never shrunk)`;
    case "replication":
      return `! ${difference.topic}: replication factor ${difference.actual}, the plan has ${difference.planned} (a partition reassignment changes it)`;
    case "config":
      return `! ${difference.topic}: ${difference.name}=${difference.actual ?? "(unset)"}, the plan has ${difference.planned}`;
  }
}

/** The printout of `--plan`: every difference and what `--apply` would do about it. */
export function planReport(
  plan: readonly TopicPlanEntry[],
  differences: readonly TopicDifference[],
): string[] {
  const header = `topic plan: ${plan.length} topics`;
  if (differences.length === 0) {
    return [header, "the cluster matches the plan"];
  }
  const applicable = differences.filter(isApplicable);
  const created = applicable.filter((d) => d.kind === "missing").length;
  return [
    header,
    ...differences.map((d) => describeDifference(d)),
    `--apply would create ${created} topic${created === 1 ? "" : "s"} and grow ${applicable.length - created}; ${leftLine(differences.length - applicable.length)}`,
  ];
}

/** The printout of `--apply`: what it changed, then what still differs. */
export function applyReport(
  plan: readonly TopicPlanEntry[],
  applied: readonly TopicDifference[],
  remaining: readonly TopicDifference[],
): string[] {
  return [
    `topic plan: ${plan.length} topics`,
    ...applied.map((d) => describeDifference(d, true)),
    applied.length === 0
      ? "nothing to create or grow"
      : `applied ${applied.length} change${applied.length === 1 ? "" : "s"}`,
    ...remaining.map((d) => describeDifference(d)),
    ...(remaining.length > 0 ? [leftLine(remaining.length)] : []),
  ];
}

function leftLine(count: number): string {
  return count === 0
    ? "nothing is left to an operator"
    : `${count} difference${count === 1 ? "" : "s"} left to an operator: --apply never deletes, shrinks or re-configures a topic (docs/operations.md, "Topics")`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
