import { createPartitionsApi, createTopicsApi, deleteTopicsApi } from "./admin-topics.ts";
import { apiVersionsApi } from "./api-versions.ts";
import { describeConfigsApi } from "./describe-configs.ts";
import { fetchApi } from "./fetch.ts";
import { deleteGroupsApi, describeGroupsApi, listGroupsApi } from "./group-admin.ts";
import {
  findCoordinatorApi,
  heartbeatApi,
  joinGroupApi,
  leaveGroupApi,
  syncGroupApi,
} from "./group-membership.ts";
import { initProducerIdApi } from "./init-producer-id.ts";
import { listOffsetsApi } from "./list-offsets.ts";
import { metadataApi } from "./metadata.ts";
import { offsetCommitApi, offsetFetchApi } from "./offsets.ts";
import { produceApi } from "./produce.ts";
import type { ApiDefinition } from "./types.ts";

export const SUPPORTED_APIS: readonly ApiDefinition[] = [
  produceApi,
  fetchApi,
  listOffsetsApi,
  metadataApi,
  offsetCommitApi,
  offsetFetchApi,
  findCoordinatorApi,
  joinGroupApi,
  heartbeatApi,
  leaveGroupApi,
  syncGroupApi,
  describeGroupsApi,
  listGroupsApi,
  apiVersionsApi(() => SUPPORTED_APIS),
  createTopicsApi,
  deleteTopicsApi,
  initProducerIdApi,
  createPartitionsApi,
  deleteGroupsApi,
  describeConfigsApi,
];

export const API_BY_KEY: ReadonlyMap<number, ApiDefinition> = new Map(
  SUPPORTED_APIS.map((api) => [api.apiKey, api]),
);
