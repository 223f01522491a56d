export { createMemoryDedupe, DEFAULT_DEDUPE_TTL_MS, type DedupeStore } from "./dedupe.ts";
export {
  type ExpressLikeHandler,
  expressHandler,
  type FastifyLikeHandler,
  fastifyHandler,
  nodeHandler,
  type ReceivedDelivery,
  type ReceiverOptions,
  type VerifyRequestResult,
  verifyRequest,
} from "./handlers.ts";
export {
  HEADERS,
  parseSignatureHeader,
  signatureHeader,
  signPayload,
  type VerifyOptions,
  type VerifyResult,
  verifySignature,
} from "./signature.ts";
