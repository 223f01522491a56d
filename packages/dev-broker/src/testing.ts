// For other packages' tests: throw-away TLS material made at test time. Kept apart from the main
// entry so nothing in production can reach it.

export { type BrokerProcess, startBrokerProcess } from "./test-support/broker-process.ts";
export {
  makeTestCertificates,
  opensslAvailable,
  type TestCertificates,
} from "./test-support/certs.ts";
