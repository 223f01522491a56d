// InitProducerId v0-v1 for the idempotent producer. Transactional ids are refused: transactions
// are out of scope.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

export const initProducerIdApi: ApiDefinition = {
  apiKey: ApiKey.InitProducerId,
  name: "InitProducerId",
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, _header, reader) {
    const transactionalId = reader.nullableString();
    reader.int32(); // transaction_timeout_ms
    const w = new Writer(32);
    w.int32(0);
    if (transactionalId !== null) {
      return w.int16(ErrorCode.INVALID_REQUEST).int64(-1).int16(-1);
    }
    return w.int16(ErrorCode.NONE).int64(ctx.allocateProducerId()).int16(0);
  },
};
