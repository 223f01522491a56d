import type { Logger } from "@th/telemetry";
import { encodeHeaders } from "../record-batch.ts";
import type { ParkedRecord } from "./context.ts";

export const PARK_HEADERS = {
  reason: "th-parked-reason",
  from: "th-parked-from",
  group: "th-parked-group",
  at: "th-parked-at",
} as const;

/** One produce of `count` records to the parking topic, which `fill` adds. */
export type ParkingProduce = (
  count: number,
  fill: (add: (key: Buffer | null, value: Buffer | null, headers: Buffer) => void) => void,
) => Promise<void>;

/**
 * Parks copies of the original bytes with why, where from and when, in one request; durable
 * before we go on.
 */
export async function parkRecords(
  produce: ParkingProduce,
  where: { topic: string; partition: number; group: string; logger: Logger },
  records: readonly ParkedRecord[],
): Promise<void> {
  const { topic, partition, group, logger } = where;
  const at = new Date().toISOString();
  await produce(records.length, (add) => {
    for (const { message, headers, reason } of records) {
      add(
        message.key,
        message.value,
        encodeHeaders({
          ...headers,
          [PARK_HEADERS.reason]: reason.slice(0, 2000),
          [PARK_HEADERS.from]: `${topic}/${partition}/${message.offset}`,
          [PARK_HEADERS.group]: group,
          [PARK_HEADERS.at]: at,
        }),
      );
    }
  });
  for (const { message, reason } of records) {
    logger.warn({ topic, partition, offset: message.offset, reason }, "record parked");
  }
}
