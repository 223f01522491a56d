import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { BLOCKED_AT_CONNECT, NETWORK_REASONS } from "../domain/failure.ts";
import { createSender, refuseEndpointUrl, type Sender } from "./sender.ts";

const production = { allowLoopback: false };
const development = { allowLoopback: true };

/** What an internal service might answer with: the kind of text a tenant must never read back. */
const SECRET_REPLY = "SSH-2.0-OpenSSH_9.6 db-primary.internal aws_secret_access_key=AKIA0123";

const servers: Server[] = [];
const sockets = new Set<Socket>();
const senders: Sender[] = [];
afterEach(() => {
  for (const sender of senders.splice(0)) {
    sender.close();
  }
});
afterAll(async () => {
  for (const socket of sockets) {
    socket.destroy();
  }
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listening(server: Server): Promise<number> {
  servers.push(server);
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

function sender(policy = development): Sender {
  const created = createSender({ policy, timeoutMs: 2_000 });
  senders.push(created);
  return created;
}

const send = (target: Sender, url: string) =>
  target.send(url, '{"event_type":"watchlist.match"}', { "content-type": "application/json" });

describe("what an attempt keeps of the answer", () => {
  it("keeps the status of an error answer and not one byte of its body", async () => {
    let requests = 0;
    const port = await listening(
      createHttpServer((request, response) => {
        requests++;
        request.resume();
        response.writeHead(500, { "content-type": "text/plain" }).end(SECRET_REPLY);
      }),
    );
    const result = await send(sender(), `http://127.0.0.1:${port}/admin`);
    expect(requests).toBe(1);
    expect(result).toEqual({ kind: "response", status: 500, durationMs: expect.any(Number) });
    expect(JSON.stringify(result)).not.toContain("SSH-2.0");
  });

  it("records a closed port as only 'connection refused': no address, no port, no socket message", async () => {
    const closed = createServer();
    const port = await listening(closed);
    await new Promise((resolve) => closed.close(resolve));
    servers.splice(servers.indexOf(closed), 1);
    const result = await send(sender(), `http://127.0.0.1:${port}/`);
    expect(result).toMatchObject({ kind: "failure", failure: "network" });
    expect(result.kind === "failure" ? result.error : null).toBe(NETWORK_REASONS.refused);
  });

  it("records a service that is not HTTP (an SSH banner) as only 'invalid http response', nothing it sent", async () => {
    const port = await listening(
      createServer((socket) => {
        socket.end(`${SECRET_REPLY}\r\n`);
      }),
    );
    const result = await send(sender(), `http://127.0.0.1:${port}/`);
    expect(result.kind === "failure" ? result.error : null).toBe(NETWORK_REASONS.protocol);
    expect(JSON.stringify(result)).not.toContain("SSH-2.0");
  });

  it("records a TLS attempt at a service that is not TLS as only 'tls handshake failed'", async () => {
    const port = await listening(
      createServer((socket) => {
        socket.on("data", () => socket.end(`${SECRET_REPLY}\r\n`));
        socket.on("error", () => {});
      }),
    );
    const result = await send(sender(), `https://127.0.0.1:${port}/`);
    expect(result).toMatchObject({ kind: "failure", failure: "network" });
    expect(result.kind === "failure" ? result.error : null).toBe(NETWORK_REASONS.tls);
    expect(JSON.stringify(result)).not.toContain("SSH-2.0");
  });
});

describe("the address check at subscribe time and at every connection", () => {
  it("answers the same at subscribe time for a name that does not resolve and one that resolves inside, naming no address", async () => {
    const inside = await refuseEndpointUrl("https://localhost/hook", production);
    const nowhere = await refuseEndpointUrl("https://no-such-host.invalid/hook", production);
    expect(inside).toBe("url host localhost must resolve to public addresses only");
    expect(nowhere?.replace("no-such-host.invalid", "localhost")).toBe(inside);
    expect(inside).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it("refuses at connect time a name that resolves to loopback, sending nothing and naming no address", async () => {
    let requests = 0;
    const port = await listening(
      createHttpServer((request, response) => {
        requests++;
        request.resume();
        response.end("ok");
      }),
    );
    const result = await send(sender(production), `https://localhost:${port}/hook`);
    expect(result).toMatchObject({
      kind: "failure",
      failure: "blocked_address",
      error: BLOCKED_AT_CONNECT,
    });
    expect(requests).toBe(0);
  });

  it.each([
    "https://[::ffff:0:7f00:1]:PORT/hook",
    "https://[::7f00:1]:PORT/hook",
    "https://[::ffff:127.0.0.1]:PORT/hook",
    "https://2130706433:PORT/hook",
  ])("refuses %s at delivery as it refuses it at subscribe time", async (template) => {
    const port = await listening(createServer((socket) => socket.destroy()));
    const url = template.replace("PORT", String(port));
    expect(await refuseEndpointUrl(url, production)).toMatch(/not (a )?public/);
    expect(await send(sender(production), url)).toMatchObject({
      kind: "failure",
      failure: "blocked_address",
    });
  });
});
