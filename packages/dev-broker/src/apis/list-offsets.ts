// ListOffsets v1-v3: -1 = latest (high watermark), -2 = earliest (log start), else first offset
// whose record timestamp is >= the given one.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

const LATEST = -1;
const EARLIEST = -2;

export const listOffsetsApi: ApiDefinition = {
  apiKey: ApiKey.ListOffsets,
  name: "ListOffsets",
  minVersion: 1,
  maxVersion: 3,
  handle(ctx, header, reader) {
    reader.int32(); // replica_id
    if (header.apiVersion >= 2) {
      reader.int8(); // isolation_level
    }
    const topics = reader.array((r) => {
      const name = r.string();
      const partitions = r.array((p) => {
        const partition = p.int32();
        const timestamp = p.int64Number();
        const log = ctx.topics.partition(name, partition);
        if (log === undefined) {
          return {
            partition,
            errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            timestamp: -1,
            offset: -1,
          };
        }
        if (timestamp === LATEST || timestamp === EARLIEST) {
          const offset = timestamp === LATEST ? log.logEndOffset : log.logStartOffset;
          return { partition, errorCode: ErrorCode.NONE, timestamp: -1, offset };
        }
        const found = log.offsetForTimestamp(timestamp);
        return {
          partition,
          errorCode: ErrorCode.NONE,
          timestamp: found?.timestamp ?? -1,
          offset: found?.offset ?? -1,
        };
      });
      return { name, partitions };
    });
    const w = new Writer();
    if (header.apiVersion >= 2) {
      w.int32(0);
    }
    w.array(topics, (w, t) => {
      w.string(t.name);
      w.array(t.partitions, (w, p) => {
        w.int32(p.partition).int16(p.errorCode).int64(p.timestamp).int64(p.offset);
      });
    });
    return w;
  },
};
