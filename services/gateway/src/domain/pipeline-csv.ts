import type { PipelineItemSummary } from "@th/api-schemas";
import { csvLine } from "./csv.ts";

/**
 * The pipeline export's columns: the item's state (stage by name, assignee, tags, follow-up,
 * notes count) and the lead's values as stored when the item was added. Tags are joined with `;`.
 */
const PIPELINE_CSV_COLUMNS: readonly {
  header: string;
  value: (item: PipelineItemSummary, stageName: string) => string | number | null;
}[] = [
  { header: "folio", value: (item) => item.folio },
  { header: "address", value: (item) => item.lead.address },
  { header: "city", value: (item) => item.lead.city },
  { header: "owner", value: (item) => item.lead.owner_name },
  { header: "stage", value: (_, stageName) => stageName },
  { header: "assignee_id", value: (item) => item.assignee_id },
  { header: "tags", value: (item) => item.tags.join(";") },
  { header: "follow_up_on", value: (item) => item.follow_up_on },
  { header: "notes_count", value: (item) => item.notes_count },
  { header: "just_value", value: (item) => item.lead.just_value },
  { header: "est_equity", value: (item) => item.lead.est_equity },
  { header: "use_class", value: (item) => item.lead.use_class },
  { header: "signals", value: (item) => item.lead.signals_fired.join(";") },
  { header: "added_at", value: (item) => item.added_at },
  { header: "updated_at", value: (item) => item.updated_at },
];

export function pipelineCsvHeader(): string {
  return csvLine(PIPELINE_CSV_COLUMNS.map((column) => column.header));
}

export function pipelineCsvRow(item: PipelineItemSummary, stageName: string): string {
  return csvLine(PIPELINE_CSV_COLUMNS.map((column) => column.value(item, stageName)));
}
