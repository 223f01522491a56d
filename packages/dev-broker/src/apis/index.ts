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
import { saslAuthenticateApi, saslHandshakeApi } from "./sasl.ts";
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
  apiVersionsApi,
  createTopicsApi,
  deleteTopicsApi,
  initProducerIdApi,
  createPartitionsApi,
  deleteGroupsApi,
  describeConfigsApi,
];

/** Served only on SASL listeners (Kafka's SaslServerAuthenticator answers them). */
export const SASL_APIS: readonly ApiDefinition[] = [saslHandshakeApi, saslAuthenticateApi];

export const API_BY_KEY: ReadonlyMap<number, ApiDefinition> = new Map(
  [...SUPPORTED_APIS, ...SASL_APIS].map((api) => [api.apiKey, api]),
);
