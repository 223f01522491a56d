import { newId } from "../domain/ids.ts";
import type { AccountsDeps } from "./tenant-rows.ts";

/** Messages sent through the public contact form. */
export function createContacts(deps: Pick<AccountsDeps, "pool" | "now">) {
  const { pool, now } = deps;

  return {
    async recordContact(input: {
      name: string;
      email: string;
      company?: string | undefined;
      message: string;
    }) {
      const id = newId("msg");
      const receivedAt = now();
      await pool.query(
        "INSERT INTO contact_requests (id, name, email, company, message, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        [id, input.name, input.email, input.company ?? null, input.message, receivedAt],
      );
      return { id, received_at: receivedAt.toISOString() };
    },

    /** The newest messages first, for the operators who answer them. */
    async listContacts(limit: number) {
      const { rows } = await pool.query<{
        id: string;
        name: string;
        email: string;
        company: string | null;
        message: string;
        created_at: Date;
      }>(
        "SELECT id, name, email, company, message, created_at FROM contact_requests ORDER BY created_at DESC, id DESC LIMIT $1",
        [limit],
      );
      return rows.map((row) => ({
        id: row.id,
        name: row.name,
        email: row.email,
        company: row.company,
        message: row.message,
        received_at: row.created_at.toISOString(),
      }));
    },
  };
}
