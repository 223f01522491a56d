// Reads of the pipeline: the listing (filters, sorts, keyset pages), one item with its notes,
// and an item's history, which is its event stream.
import type { Lead, PipelineLeadSummary, PipelineListQuery } from "@th/api-schemas";
import type { PipelineItemChanged } from "@th/contracts";
import type { Pool } from "@th/db";
import { ApiError } from "@th/service-kit";
import { historyEntry } from "../domain/items.ts";
import {
  decodeCursor,
  decodeVersionCursor,
  encodeCursor,
  encodeVersionCursor,
  sortOf,
} from "../domain/list-cursor.ts";

const SUMMARY_COLUMNS = `id, folio, stage_id, assignee_id, tags, follow_up_on::text AS follow_up_on,
  notes_count, version, added_by, added_at, updated_at, lead`;

interface SummaryRow {
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
  lead: unknown;
}

function summaryOf(row: SummaryRow) {
  return {
    id: row.id,
    folio: row.folio,
    stage_id: row.stage_id,
    assignee_id: row.assignee_id,
    tags: row.tags,
    follow_up_on: row.follow_up_on,
    notes_count: row.notes_count,
    version: row.version,
    added_by: row.added_by,
    added_at: row.added_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    lead: row.lead as PipelineLeadSummary,
  };
}

function invalidCursor(): ApiError {
  return new ApiError("invalid_request", "invalid querystring: cursor is not one this API issued", {
    fields: [{ path: "querystring.cursor", message: "not a cursor of this listing and sort" }],
  });
}

/** `LIKE` text that matches `text` literally. */
function literalLike(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

type Filters = Omit<PipelineListQuery, "sort" | "cursor" | "limit">;

/** The WHERE clause of a listing's filters, with its parameters after the tenant's. */
function filterClause(tenantId: string, filters: Filters) {
  const params: unknown[] = [tenantId];
  const where = ["tenant_id = $1"];
  const add = (sql: (n: number) => string, value: unknown) => {
    params.push(value);
    where.push(sql(params.length));
  };
  if (filters.stage_id !== undefined) {
    add((n) => `stage_id = $${n}`, filters.stage_id);
  }
  if (filters.assignee_id === "none") {
    where.push("assignee_id IS NULL");
  } else if (filters.assignee_id !== undefined) {
    add((n) => `assignee_id = $${n}`, filters.assignee_id);
  }
  if (filters.tag !== undefined) {
    add((n) => `tags @> ARRAY[$${n}::text]`, filters.tag);
  }
  if (filters.follow_up_due !== undefined) {
    add((n) => `follow_up_on <= $${n}::date`, filters.follow_up_due);
  }
  if (filters.folio !== undefined) {
    add((n) => `folio = $${n}`, filters.folio);
  }
  if (filters.q !== undefined) {
    add((n) => `search_text LIKE '%' || $${n} || '%'`, literalLike(filters.q.toLowerCase()));
  }
  return { where, params };
}

function sortValueOf(row: SummaryRow, column: "updated_at" | "added_at" | "follow_up_on") {
  if (column === "follow_up_on") {
    return row.follow_up_on ?? "infinity";
  }
  return row[column].toISOString();
}

export function createItemReads(pool: Pool) {
  return {
    /** A page of the tenant's items, filtered and sorted, after the cursor. */
    async list(tenantId: string, query: PipelineListQuery) {
      const { column, descending } = sortOf(query.sort);
      const { where, params } = filterClause(tenantId, query);
      const key = column === "follow_up_on" ? "coalesce(follow_up_on, 'infinity'::date)" : column;
      const cast = column === "follow_up_on" ? "date" : "timestamptz";
      if (query.cursor !== undefined) {
        const cursor = decodeCursor(query.cursor, query.sort);
        if (cursor === undefined) {
          throw invalidCursor();
        }
        params.push(cursor.value, cursor.id);
        const n = params.length;
        where.push(`(${key}, id) ${descending ? "<" : ">"} ($${n - 1}::${cast}, $${n})`);
      }
      params.push(query.limit + 1);
      const direction = descending ? "DESC" : "ASC";
      const { rows } = await pool.query<SummaryRow>(
        `SELECT ${SUMMARY_COLUMNS} FROM items WHERE ${where.join(" AND ")}
         ORDER BY ${key} ${direction}, id ${direction} LIMIT $${params.length}`,
        params,
      );
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return {
        data: page.map(summaryOf),
        next_cursor:
          rows.length > query.limit && last !== undefined
            ? encodeCursor({ sort: query.sort, value: sortValueOf(last, column), id: last.id })
            : null,
      };
    },

    /** One item with its notes and the lead as read when added. */
    async get(tenantId: string, itemId: string) {
      const { rows } = await pool.query<SummaryRow & { snapshot: string }>(
        `SELECT ${SUMMARY_COLUMNS}, snapshot FROM items WHERE tenant_id = $1 AND id = $2`,
        [tenantId, itemId],
      );
      const row = rows[0];
      if (row === undefined) {
        throw new ApiError("not_found", `no pipeline item ${itemId}`);
      }
      const notes = await pool.query<{ event: PipelineItemChanged }>(
        "SELECT event FROM item_events WHERE tenant_id = $1 AND item_id = $2 AND type = 'noted' ORDER BY version",
        [tenantId, itemId],
      );
      return {
        ...summaryOf(row),
        notes: notes.rows.map(({ event }) => ({
          id: event.note_id ?? "",
          text: event.note_text ?? "",
          author_id: event.member_id,
          created_at: event.occurred_at,
        })),
        snapshot: JSON.parse(row.snapshot) as Lead,
      };
    },

    /** An item's events after the cursor, oldest first; a removed item's stay readable. */
    async history(
      tenantId: string,
      itemId: string,
      query: { cursor?: string | undefined; limit: number },
    ) {
      const after = query.cursor === undefined ? 0 : decodeVersionCursor(query.cursor);
      if (after === undefined) {
        throw invalidCursor();
      }
      const { rows } = await pool.query<{ event: PipelineItemChanged }>(
        `SELECT event FROM item_events WHERE tenant_id = $1 AND item_id = $2 AND version > $3
         ORDER BY version LIMIT $4`,
        [tenantId, itemId, after, query.limit + 1],
      );
      if (rows.length === 0 && after === 0) {
        throw new ApiError("not_found", `no pipeline item ${itemId}`);
      }
      const page = rows.slice(0, query.limit).map(({ event }) => historyEntry(event));
      const last = page.at(-1);
      return {
        data: page,
        next_cursor:
          rows.length > query.limit && last !== undefined
            ? encodeVersionCursor(last.version)
            : null,
      };
    },

    /** These items as the list shows them, in the order given. */
    async byIds(tenantId: string, ids: readonly string[]) {
      if (ids.length === 0) {
        return [];
      }
      const { rows } = await pool.query<SummaryRow>(
        `SELECT ${SUMMARY_COLUMNS} FROM items WHERE tenant_id = $1 AND id = ANY($2::text[])
         ORDER BY array_position($2::text[], id)`,
        [tenantId, ids],
      );
      return rows.map(summaryOf);
    },

    /** Which of these folios the tenant's pipeline holds, and as which items. */
    async present(tenantId: string, folios: readonly string[]) {
      const { rows } = await pool.query<{ folio: string; id: string }>(
        "SELECT folio, id FROM items WHERE tenant_id = $1 AND folio = ANY($2::text[])",
        [tenantId, folios],
      );
      return rows;
    },
  };
}

export type ItemReads = ReturnType<typeof createItemReads>;
