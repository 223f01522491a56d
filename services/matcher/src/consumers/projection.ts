// `parcel.ingested` -> the matcher's compact parcel projection (group `matcher.parcels`), which
// manual runs read. Its own group, so a projection that lags never delays matching.
import { type Bus, on, type RunningConsumer } from "@th/bus";
import { contracts, type ParcelIngested } from "@th/contracts";
import type { Pool } from "@th/db";
import { groupCommit } from "../db/group-commit.ts";
import { upsertProjection } from "../db/projection.ts";

const PROJECTION_GROUP = "matcher.parcels";

export async function consumeParcelsForProjection(deps: {
  bus: Bus;
  pool: Pool;
  partitionsConsumedConcurrently: number;
}): Promise<RunningConsumer> {
  const write = groupCommit<ParcelIngested>((rows) => upsertProjection(deps.pool, rows));
  return deps.bus.consume({
    group: PROJECTION_GROUP,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently,
    subscriptions: [
      on(contracts.parcelIngested, async ({ value }) => {
        await write([value]);
        return undefined;
      }),
    ],
  });
}
