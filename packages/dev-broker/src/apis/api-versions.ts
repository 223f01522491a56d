// ApiVersions v0-v2. Newer (flexible) versions are answered with UNSUPPORTED_VERSION in the v0
// layout together with the supported ranges (KIP-511), so clients retry with a version we speak.
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition } from "./types.ts";

export const API_VERSIONS_MAX = 2;

export function encodeApiVersions(
  apis: readonly ApiDefinition[],
  errorCode: number,
  version: number,
): Writer {
  const w = new Writer(512);
  w.int16(errorCode);
  w.array(apis, (w, api) => {
    w.int16(api.apiKey).int16(api.minVersion).int16(api.maxVersion);
  });
  if (version >= 1) {
    w.int32(0);
  }
  return w;
}

export function apiVersionsApi(allApis: () => readonly ApiDefinition[]): ApiDefinition {
  return {
    apiKey: ApiKey.ApiVersions,
    name: "ApiVersions",
    minVersion: 0,
    maxVersion: API_VERSIONS_MAX,
    handle(_ctx, header) {
      return encodeApiVersions(allApis(), ErrorCode.NONE, header.apiVersion);
    },
  };
}
