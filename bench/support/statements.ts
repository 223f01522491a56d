// Which SQL statements a bench phase ran, and how often, from `pg_stat_statements`: the
// statements of one database, reset before the phase and read after it, each with its calls and
// execution time per unit of work. Needs `shared_preload_libraries = 'pg_stat_statements'` in
// the server's configuration; without it `open` answers null and the bench says so.
import type { Pool } from "@th/db";

export interface StatementFigure {
  query: string;
  calls: number;
  totalMs: number;
  rows: number;
}

/** The statements of `database` since the last reset, by total execution time. */
export async function openStatements(pool: Pool, database: string) {
  try {
    await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    await pool.query("SELECT count(*) FROM pg_stat_statements");
  } catch {
    return null;
  }
  return {
    async reset(): Promise<void> {
      await pool.query("SELECT pg_stat_statements_reset()");
    },
    async read(limit = 8): Promise<StatementFigure[]> {
      const { rows } = await pool.query<{
        query: string;
        calls: string;
        total_ms: number;
        rows: string;
      }>(
        `SELECT query, calls, total_exec_time AS total_ms, rows FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
          ORDER BY total_exec_time DESC LIMIT $2`,
        [database, limit],
      );
      return rows.map((row) => ({
        query: row.query.replace(/\s+/g, " ").slice(0, 110),
        calls: Number(row.calls),
        totalMs: row.total_ms,
        rows: Number(row.rows),
      }));
    },
  };
}

/** One line a statement: calls and execution time per unit of work, and the statement. */
export function statementLines(figures: readonly StatementFigure[], units: number): string[] {
  return figures.map(
    (figure) =>
      `${(figure.calls / units).toFixed(3).padStart(8)} calls ${((figure.totalMs * 1000) / units).toFixed(1).padStart(7)} µs ${(figure.rows / units).toFixed(2).padStart(7)} rows  ${figure.query}`,
  );
}
