import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A file written for a test: where it is and what it holds. */
export interface TestFile {
  path: string;
  pem: Buffer;
}

/** A throw-away PKI for TLS tests, made with the openssl CLI in a temporary directory. */
export interface TestCertificates {
  dir: string;
  /** The CA that signed the server and client certificates. */
  ca: TestFile;
  /** A second CA that signed nothing here: trusting only it makes the broker untrusted. */
  otherCa: TestFile;
  /** For `localhost` and `127.0.0.1`. */
  server: { cert: TestFile; key: TestFile };
  /** A client certificate (CN=th-client) for mutual TLS, signed by `ca`. */
  client: { cert: TestFile; key: TestFile };
  /** A client certificate signed by `otherCa`, which the broker does not trust. */
  strangerClient: { cert: TestFile; key: TestFile };
  remove(): Promise<void>;
}

async function caIn(dir: string, name: string): Promise<void> {
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    join(dir, `${name}.key`),
    "-out",
    join(dir, `${name}.pem`),
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
}

async function leafIn(
  dir: string,
  name: string,
  ca: string,
  subject: string,
  extensions: string,
): Promise<void> {
  await run("openssl", [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    join(dir, `${name}.key`),
    "-out",
    join(dir, `${name}.csr`),
    "-subj",
    subject,
  ]);
  await writeFile(join(dir, `${name}.ext`), extensions);
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    join(dir, `${name}.csr`),
    "-CA",
    join(dir, `${ca}.pem`),
    "-CAkey",
    join(dir, `${ca}.key`),
    "-CAcreateserial",
    "-out",
    join(dir, `${name}.pem`),
    "-days",
    "2",
    "-extfile",
    join(dir, `${name}.ext`),
  ]);
}

async function fileOf(dir: string, name: string): Promise<TestFile> {
  const path = join(dir, name);
  return { path, pem: await readFile(path) };
}

/** Makes a CA, a server certificate for the loopback names and client certificates. */
export async function makeTestCertificates(): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), "th-pki-"));
  await Promise.all([caIn(dir, "ca"), caIn(dir, "other-ca")]);
  await Promise.all([
    leafIn(
      dir,
      "server",
      "ca",
      "/CN=localhost",
      "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    ),
    leafIn(dir, "client", "ca", "/CN=th-client", "extendedKeyUsage=clientAuth\n"),
    leafIn(dir, "stranger", "other-ca", "/CN=th-stranger", "extendedKeyUsage=clientAuth\n"),
  ]);
  return {
    dir,
    ca: await fileOf(dir, "ca.pem"),
    otherCa: await fileOf(dir, "other-ca.pem"),
    server: { cert: await fileOf(dir, "server.pem"), key: await fileOf(dir, "server.key") },
    client: { cert: await fileOf(dir, "client.pem"), key: await fileOf(dir, "client.key") },
    strangerClient: {
      cert: await fileOf(dir, "stranger.pem"),
      key: await fileOf(dir, "stranger.key"),
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
