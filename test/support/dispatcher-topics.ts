// The dispatcher's own topic list, for the tests and benches that provision a broker for it.
export { DISPATCHER_TOPICS } from "@th/webhook-dispatcher/app";
