// ApiVersions v0-v4, as Apache Kafka 4.0 answers them. v3 is the first flexible version (KIP-482):
// the request header is v2 and the body carries the client's software name and version, but the
// response header stays v0 (a client cannot know the broker's header version before this answer).
// Versions above v4 get UNSUPPORTED_VERSION in the v0 layout (KIP-511) so clients retry lower.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import type { VersionRange } from "../protocol/floor.ts";
import type { Reader } from "../protocol/reader.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

const API_VERSIONS_MAX = 4;
const FIRST_FLEXIBLE_VERSION = 3;

/** Kafka's rule for ClientSoftwareName and ClientSoftwareVersion (KIP-511). */
const SOFTWARE_NAME_VERSION = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

interface ApiVersionsAnswer {
  errorCode: number;
  apiKeys: readonly VersionRange[];
}

function encodeApiVersions(answer: ApiVersionsAnswer, version: number): Writer {
  const w = new Writer(512);
  w.int16(answer.errorCode);
  if (version < FIRST_FLEXIBLE_VERSION) {
    w.array(answer.apiKeys, (w, api) => {
      w.int16(api.apiKey).int16(api.advertisedMinVersion).int16(api.maxVersion);
    });
  } else {
    w.compactArray(answer.apiKeys, (w, api) => {
      w.int16(api.apiKey).int16(api.advertisedMinVersion).int16(api.maxVersion).noTaggedFields();
    });
  }
  if (version >= 1) {
    w.int32(0); // throttle_time_ms
  }
  if (version >= FIRST_FLEXIBLE_VERSION) {
    // SupportedFeatures, FinalizedFeaturesEpoch, FinalizedFeatures and ZkMigrationReady are
    // tagged and left out at their defaults: this broker has no feature flags to finalize.
    w.noTaggedFields();
  }
  return w;
}

/** The answer to ApiVersions above our maximum: v0 layout, listing only ApiVersions itself. */
export function encodeUnsupportedApiVersions(versions: ReadonlyMap<number, VersionRange>): Writer {
  const own = versions.get(ApiKey.ApiVersions);
  return encodeApiVersions(
    { errorCode: ErrorCode.UNSUPPORTED_VERSION, apiKeys: own === undefined ? [] : [own] },
    0,
  );
}

/** v3+ bodies name the client; Kafka refuses names outside its pattern with INVALID_REQUEST. */
function hasValidSoftware(reader: Reader): boolean {
  const name = reader.compactString();
  const version = reader.compactString();
  reader.skipTaggedFields();
  return SOFTWARE_NAME_VERSION.test(name) && SOFTWARE_NAME_VERSION.test(version);
}

export const apiVersionsApi: ApiDefinition = {
  apiKey: ApiKey.ApiVersions,
  name: "ApiVersions",
  minVersion: 0,
  maxVersion: API_VERSIONS_MAX,
  firstFlexibleVersion: FIRST_FLEXIBLE_VERSION,
  handle(ctx, header, reader) {
    if (header.apiVersion >= FIRST_FLEXIBLE_VERSION && !hasValidSoftware(reader)) {
      return encodeApiVersions(
        { errorCode: ErrorCode.INVALID_REQUEST, apiKeys: [] },
        header.apiVersion,
      );
    }
    return encodeApiVersions(
      { errorCode: ErrorCode.NONE, apiKeys: [...ctx.versions.values()] },
      header.apiVersion,
    );
  },
};
