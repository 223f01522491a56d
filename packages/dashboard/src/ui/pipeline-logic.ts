// The pipeline pages' logic that does not touch the DOM: the listing's query from the filters,
// the day that is "today", tags as typed, and what to tell a member whose change was stale.
import type { operations } from "@th/client";

export type PipelineQuery = NonNullable<operations["listPipelineItems"]["parameters"]["query"]>;

export interface PipelineFilters {
  stage_id: string;
  /** `""` anyone, `"me"` the signed-in member, `"none"` unassigned. */
  assignee: string;
  tag: string;
  follow_up_due: string;
  q: string;
  sort: PipelineQuery["sort"];
}

export const EMPTY_PIPELINE_FILTERS: PipelineFilters = {
  stage_id: "",
  assignee: "",
  tag: "",
  follow_up_due: "",
  q: "",
  sort: "-updated_at",
};

/** Today as the API counts follow-ups: a UTC day. */
export function utcToday(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/** The listing's query for these filters: blank fields are left out. */
export function pipelineQuery(
  filters: PipelineFilters,
  memberId: string,
  extra: { cursor?: string; limit?: number } = {},
): PipelineQuery {
  const query: PipelineQuery = { sort: filters.sort, limit: extra.limit ?? 50 };
  if (filters.stage_id) {
    query.stage_id = filters.stage_id;
  }
  if (filters.assignee) {
    query.assignee_id = filters.assignee === "me" ? memberId : filters.assignee;
  }
  if (filters.tag.trim()) {
    query.tag = filters.tag.trim();
  }
  if (filters.follow_up_due) {
    query.follow_up_due = filters.follow_up_due;
  }
  if (filters.q.trim().length >= 2) {
    query.q = filters.q.trim();
  }
  if (extra.cursor) {
    query.cursor = extra.cursor;
  }
  return query;
}

/** The CSV export's query string for the same filters (no sort or page: it takes them all). */
export function exportQuery(filters: PipelineFilters, memberId: string): string {
  const { sort: _sort, limit: _limit, ...rest } = pipelineQuery(filters, memberId);
  const params = new URLSearchParams(rest as Record<string, string>);
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** Tags as a member types them: comma-separated, trimmed, blanks dropped, each once. */
export function parseTags(text: string): string[] {
  return [
    ...new Set(
      text
        .split(",")
        .map((tag) => tag.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
}

/** The page's word for a change refused because the item changed since it was read. */
export const STALE_CHANGE =
  "Someone else changed this item since you loaded it; it has been reloaded. Make your change again.";

/** Whether a follow-up day is due: on or before today. */
export function isDue(followUpOn: string | null, today: string): boolean {
  return followUpOn !== null && followUpOn <= today;
}
