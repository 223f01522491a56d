// Throw-away TLS material for tests, made with the openssl CLI at test time: a CA, a server
// certificate for 127.0.0.1/localhost, a client certificate from the same CA (mutual TLS) and one
// from an unrelated CA (must be refused). Nothing is checked in; the directory is removed after.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const opensslAvailable = spawnSync("openssl", ["version"]).status === 0;

export interface TestCertificates {
  dir: string;
  /** Paths, for kcat and the CLI. */
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  strangerCertFile: string;
  strangerKeyFile: string;
  /** PEM contents, for startBroker and kafkajs. */
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  strangerCert: string;
  strangerKey: string;
  /** The client certificate's subject as Kafka's principal names it. */
  clientPrincipal: string;
  remove(): void;
}

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

function newKeyArgs(keyFile: string): string[] {
  return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", keyFile];
}

function makeCa(dir: string, name: string, subject: string): void {
  openssl(dir, [
    "req",
    "-x509",
    ...newKeyArgs(`${name}.key`),
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    "-subj",
    subject,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
}

function issue(dir: string, ca: string, name: string, subject: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, ["req", ...newKeyArgs(`${name}.key`), "-out", `${name}.csr`, "-subj", subject]);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  ]);
}

export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), "dev-broker-tls-"));
  makeCa(dir, "ca", "/CN=Dev Broker Test CA");
  makeCa(dir, "stranger-ca", "/CN=Somebody Else's CA");
  issue(
    dir,
    "ca",
    "server",
    "/CN=localhost",
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
  );
  issue(
    dir,
    "ca",
    "client",
    "/C=US/O=Terminal House/CN=lead-service",
    "extendedKeyUsage=clientAuth\n",
  );
  issue(dir, "stranger-ca", "stranger", "/CN=intruder", "extendedKeyUsage=clientAuth\n");
  const file = (name: string) => join(dir, name);
  const read = (name: string) => readFileSync(file(name), "utf8");
  return {
    dir,
    caFile: file("ca.pem"),
    serverCertFile: file("server.pem"),
    serverKeyFile: file("server.key"),
    clientCertFile: file("client.pem"),
    clientKeyFile: file("client.key"),
    strangerCertFile: file("stranger.pem"),
    strangerKeyFile: file("stranger.key"),
    ca: read("ca.pem"),
    serverCert: read("server.pem"),
    serverKey: read("server.key"),
    clientCert: read("client.pem"),
    clientKey: read("client.key"),
    strangerCert: read("stranger.pem"),
    strangerKey: read("stranger.key"),
    clientPrincipal: "User:CN=lead-service,O=Terminal House,C=US",
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
