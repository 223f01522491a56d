// The one log line per request names its URL as received: a key a client escaped in that URL
// (`th%5Flive%5F…`, `%255F`, `+`) must leave the log as its prefix and last four only.
import { generateApiKey } from "@th/api-keys";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpApp, type HttpApp } from "./app.ts";

const lines: string[] = [];
let app: HttpApp;

beforeAll(async () => {
  app = await createHttpApp({
    logger: createLogger({
      service: "log-test",
      level: "info",
      destination: { write: (line: string) => lines.push(line) },
    }),
    title: "log test",
  });
  app.get("/v1/leads", async () => ({ leads: [] }));
  await app.ready();
});
afterAll(() => app.close());

/** Percent-escapes every character of the text. */
const escapeAll = (text: string) =>
  [...text].map((char) => `%${char.charCodeAt(0).toString(16)}`).join("");

describe("the request log line", () => {
  it("writes no key tail in any form when the key is escaped in the URL's path or query", async () => {
    const key = generateApiKey();
    const body = key.slice("th_live_".length);
    const forms = [
      key.replaceAll("_", "%5F"),
      key.replace("live_", "live%5f"),
      key.replaceAll("_", "%255F"),
      `Bearer+${key.replaceAll("_", "%5F")}`,
      escapeAll(key),
      `TH_LIVE${escapeAll(`_${body}`)}`,
    ];
    for (const form of forms) {
      await app.inject({ method: "GET", url: `/v1/leads?county=23&api_key=${form}` });
      await app.inject({ method: "GET", url: `/v1/${form}/leads` });
    }
    const requests = lines.map((line) => JSON.parse(line)).filter((line) => line.msg === "request");
    expect(requests).toHaveLength(forms.length * 2);
    let written = lines.join("\n");
    for (let round = 0; round < 4; round++) {
      written = written
        .replaceAll("+", " ")
        .replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
          String.fromCharCode(Number.parseInt(hex, 16)),
        );
    }
    for (let at = 0; at + 6 <= body.length; at++) {
      expect(written).not.toContain(body.slice(at, at + 6));
    }
    expect(requests[0].url).toBe(`/v1/leads?county=23&api_key=th_live_…${key.slice(-4)}`);
  });
});
