import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "./errors.ts";
import { foliosFromHeader, foliosHeader, INTERNAL_HEADERS } from "./internal-api.ts";
import { createInternalClient } from "./internal-client.ts";
import { SIGNED_CALL_HEADERS } from "./internal-signature.ts";

let server: Server;
let baseUrl: string;
const seen: { request: IncomingMessage; body: string; socketPort: number }[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      seen.push({ request, body, socketPort: request.socket.remotePort ?? 0 });
      if (request.url === "/base/slow") {
        setTimeout(() => response.end("{}"), 1_000);
        return;
      }
      if (request.url === "/base/html") {
        response.writeHead(502, { "content-type": "text/html" }).end("<h1>bad gateway</h1>");
        return;
      }
      if (request.url === "/base/empty") {
        response.writeHead(204).end();
        return;
      }
      response
        .writeHead(201, { "content-type": "application/json" })
        .end(JSON.stringify({ echoed: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/base`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const signing = { caller: "gateway", root: "r".repeat(40), receiver: "parcels" };
const client = () => createInternalClient({ baseUrl, signing, timeoutMs: 300 });

describe("the internal client", () => {
  it("signs the call and sends the caller's identity, the request id and a JSON body under the base path", async () => {
    seen.length = 0;
    const reply = await client().send<{ echoed: unknown }>("POST", "/things", {
      identity: { tenantId: "ten_1", memberId: "mem_1", keyId: "key_1", tier: "pro" },
      requestId: "req_1",
      body: { folios: ["23-1"] },
    });
    expect(reply).toEqual({ status: 201, body: { echoed: { folios: ["23-1"] } } });
    const headers = seen[0]?.request.headers ?? {};
    expect(seen[0]?.request.url).toBe("/base/things");
    expect(headers[SIGNED_CALL_HEADERS.caller]).toBe("gateway");
    expect(headers[SIGNED_CALL_HEADERS.route]).toBe("/base/things");
    expect(headers[SIGNED_CALL_HEADERS.signature]).toMatch(/^t=\d+,n=[\w-]+,v1=[0-9a-f]{64}$/);
    expect(headers[SIGNED_CALL_HEADERS.bodyDigest]).toBe(
      createHash("sha256")
        .update(seen[0]?.body ?? "")
        .digest("hex"),
    );
    expect(headers[INTERNAL_HEADERS.tenant]).toBe("ten_1");
    expect(headers[INTERNAL_HEADERS.member]).toBe("mem_1");
    expect(headers[INTERNAL_HEADERS.key]).toBe("key_1");
    expect(headers[INTERNAL_HEADERS.tier]).toBe("pro");
    expect(headers[INTERNAL_HEADERS.requestId]).toBe("req_1");
    expect(headers["x-request-id"]).toBe("req_1");
    expect(headers["content-type"]).toBe("application/json");
  });

  it("keeps connections alive: calls one after another reuse their sockets", async () => {
    seen.length = 0;
    const internal = client();
    for (let i = 0; i < 20; i++) {
      await internal.send("GET", "/things");
    }
    // The pool may open a second socket while the first finishes an answer, not one per call.
    expect(new Set(seen.map((call) => call.socketPort)).size).toBeLessThanOrEqual(2);
    await internal.close();
  });

  it("answers an empty body as undefined", async () => {
    expect(await client().send("GET", "/empty")).toEqual({ status: 204, body: undefined });
  });

  it("maps a service that does not answer in time to unavailable", async () => {
    const error = await client()
      .send("GET", "/slow")
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe("unavailable");
  });

  it("maps a refused connection to unavailable", async () => {
    const closed = createInternalClient({
      baseUrl: "http://127.0.0.1:1",
      signing,
      timeoutMs: 300,
    });
    const error = await closed.send("GET", "/x").catch((caught: unknown) => caught);
    expect((error as ApiError).code).toBe("unavailable");
  });

  it("maps an answer that is not JSON (a proxy's error page) to unavailable", async () => {
    const error = await client()
      .send("GET", "/html")
      .catch((caught: unknown) => caught);
    expect((error as ApiError).code).toBe("unavailable");
  });
});

describe("the x-th-folios header", () => {
  it("names any folio, commas and spaces included, and no folio at all", () => {
    const folios = ["23-0101000000010", "16-A,B 7", "12-ÄÖ"];
    const value = foliosHeader(folios);
    expect(value).toMatch(/^[\x21-\x7e]*$/);
    expect(foliosFromHeader(value)).toEqual(folios);
    expect(foliosFromHeader(foliosHeader([]))).toEqual([]);
    expect(foliosFromHeader(undefined)).toBeUndefined();
  });
});
