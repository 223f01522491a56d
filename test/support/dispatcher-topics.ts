import { contracts, deliveryRetryLadder } from "@th/contracts";

/** Every topic a webhook dispatcher produces or consumes. */
export const DISPATCHER_TOPICS = [
  contracts.matchFound,
  contracts.deliveryAttempted,
  ...deliveryRetryLadder.map((stage) => stage.contract),
  contracts.deliveryDeadLetter,
  contracts.leadViewRecorded,
  contracts.tenantChanged,
  contracts.keyRevoked,
];
