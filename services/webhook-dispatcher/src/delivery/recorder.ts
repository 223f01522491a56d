import type { Pool } from "@th/db";
import { type AttemptRecord, writeAttempts } from "../db/attempts.ts";

/**
 * Records attempts in groups: every attempt that finishes while a group is being written waits
 * for the next group, and each group is one statement (`writeAttempts`).
 */
export function createAttemptRecorder(options: { pool: Pool; maxGroup?: number }) {
  const maxGroup = options.maxGroup ?? 500;
  let queue: { record: AttemptRecord; settle: (committed: boolean | Error) => void }[] = [];
  let writing = false;

  async function drain() {
    writing = true;
    try {
      while (queue.length > 0) {
        const group = queue.slice(0, maxGroup);
        queue = queue.slice(group.length);
        try {
          const updated = await writeAttempts(
            options.pool,
            group.map((entry) => entry.record),
          );
          for (const entry of group) {
            entry.settle(updated.has(entry.record.id));
          }
        } catch (error) {
          if (group.length === 1) {
            group[0]?.settle(error as Error);
            continue;
          }
          // One record the database refuses must not fail the attempts of other deliveries
          // written with it: each is written alone, and only the bad one fails.
          for (const entry of group) {
            try {
              entry.settle(
                (await writeAttempts(options.pool, [entry.record])).has(entry.record.id),
              );
            } catch (alone) {
              entry.settle(alone as Error);
            }
          }
        }
      }
    } finally {
      writing = false;
    }
  }

  return {
    /** Resolves true once written, false when the lease was lost (nothing written). */
    record(record: AttemptRecord): Promise<boolean> {
      return new Promise<boolean>((resolve, reject) => {
        queue.push({
          record,
          settle: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)),
        });
        if (!writing) {
          writing = true;
          // Attempts answered in the same turn of the event loop go in the same group.
          setImmediate(() => {
            drain().catch(() => {});
          });
        }
      });
    },
  };
}

export type AttemptRecorder = ReturnType<typeof createAttemptRecorder>;
