import { request } from "node:http";

/** Where the Docker engine's API is: DOCKER_HOST (unix:// or tcp://), else the default socket. */
export function dockerEndpoint(
  dockerHost: string | undefined,
): { socketPath: string } | { host: string; port: number } {
  if (!dockerHost) {
    return { socketPath: "/var/run/docker.sock" };
  }
  if (dockerHost.startsWith("unix://")) {
    return { socketPath: dockerHost.slice("unix://".length) };
  }
  const url = new URL(dockerHost.replace(/^tcp:/, "http:"));
  return { host: url.hostname, port: Number(url.port || 2375) };
}

export function describeEndpoint(endpoint: ReturnType<typeof dockerEndpoint>): string {
  return "socketPath" in endpoint
    ? `unix://${endpoint.socketPath}`
    : `tcp://${endpoint.host}:${endpoint.port}`;
}

/**
 * Whether a Docker engine answers its ping (`GET /_ping` -> `OK`) within `timeoutMs`. An engine
 * behind TLS (DOCKER_TLS_VERIFY) does not answer plain HTTP: set TEST_STORES=containers there.
 */
export function dockerAnswers(
  endpoint: ReturnType<typeof dockerEndpoint>,
  timeoutMs = 1500,
): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      { ...endpoint, path: "/_ping", method: "GET", timeout: timeoutMs },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve(res.statusCode === 200 && body.trim() === "OK"));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
}
