// ApiVersions v0-v2. Newer (flexible) versions are answered with UNSUPPORTED_VERSION in the v0
// layout together with the supported ranges (KIP-511), so clients retry with a version we speak.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import type { VersionRange } from "../protocol/floor.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

export const API_VERSIONS_MAX = 2;

export function encodeApiVersions(
  versions: Iterable<VersionRange>,
  errorCode: number,
  version: number,
): Writer {
  const w = new Writer(512);
  w.int16(errorCode);
  w.array([...versions], (w, api) => {
    w.int16(api.apiKey).int16(api.advertisedMinVersion).int16(api.maxVersion);
  });
  if (version >= 1) {
    w.int32(0);
  }
  return w;
}

export const apiVersionsApi: ApiDefinition = {
  apiKey: ApiKey.ApiVersions,
  name: "ApiVersions",
  minVersion: 0,
  maxVersion: API_VERSIONS_MAX,
  handle(ctx, header) {
    return encodeApiVersions(ctx.versions.values(), ErrorCode.NONE, header.apiVersion);
  },
};
