import { InMemorySpanExporter } from "@opentelemetry/sdk-trace";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "./logger.ts";
import { scrubText } from "./redact.ts";
import { injectContext, inSpan, startTelemetry, withExtractedContext } from "./tracing.ts";

const exporter = new InMemorySpanExporter();
const telemetry = startTelemetry({ service: "telemetry-test", enabled: true, exporter });
afterAll(() => telemetry.shutdown());

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = { write: (line: string) => lines.push(JSON.parse(line)) };
  return { lines, logger: createLogger({ service: "t", level: "info", destination }) };
}

describe("secret scrubbing", () => {
  it("keeps only the prefix and last four characters of API keys and webhook secrets", () => {
    const key = "th_live_4QmZ8cW1rT9bX2nY7kP3sV6hJ5dL0aFgE1uI8oRzq";
    expect(scrubText(`key ${key} used`)).toBe("key th_live_…oRzq used");
    expect(scrubText("whsec_abcdefghijklmnop1234")).toBe("whsec_…1234");
    expect(scrubText("Authorization: Bearer abc.def.ghi")).toBe("Authorization: Bearer ….ghi");
    expect(scrubText("postgres://u:hunter2@db:5432/x")).toBe("postgres://u:***@db:5432/x");
  });

  it("never writes a full key, secret field or password to a log line", () => {
    const { lines, logger } = capture();
    const key = "th_live_4QmZ8cW1rT9bX2nY7kP3sV6hJ5dL0aFgE1uI8oRzq";
    logger.info(
      { headers: { authorization: `Bearer ${key}` }, secret: "whsec_x", note: key },
      `got ${key}`,
    );
    const written = JSON.stringify(lines);
    expect(written).not.toContain(key);
    expect(written).not.toContain("whsec_x");
    expect(lines[0]?.secret).toBe("[redacted]");
    expect(lines[0]?.msg).toBe("got th_live_…oRzq");
  });
});

describe("secret scrubbing under percent-encoding (a key a client escaped in a URL)", () => {
  const key = "th_live_4QmZ8cW1rT9bX2nY7kP3sV6hJ5dL0aFgE1uI8oRzq";
  const body = key.slice("th_live_".length);
  /** Every escaping of the key a client or proxy might send. */
  const forms: Record<string, string> = {
    "underscores escaped": key.replaceAll("_", "%5F"),
    "second underscore only": key.replace(/_(?=4Qm)/, "%5F"),
    "lowercase hex": key.replaceAll("_", "%5f"),
    "mixed case prefix": `TH%5fLive%5F${body}`,
    "double-encoded": key.replaceAll("_", "%255F"),
    "triple-encoded": key.replaceAll("_", "%25255F"),
    "every character escaped": [...key]
      .map((char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`)
      .join(""),
    "tail escaped after a plain start": `th_live_${body.slice(0, 8)}${[...body.slice(8)]
      .map((char) => `%${char.charCodeAt(0).toString(16)}`)
      .join("")}`,
    "tail double-encoded after a plain start": `th_live_${body.slice(0, 8)}${[...body.slice(8)]
      .map((char) => `%25${char.charCodeAt(0).toString(16)}`)
      .join("")}`,
    "glued to a word": `api_key_${key}`,
    "form-encoded bearer": `Bearer+${key.replaceAll("_", "%5F")}`,
    "encoded space before": `token%20${key}`,
  };

  /** The text decoded as often as it changes, `+` as a space, as a reader of the log could. */
  function decodedFully(text: string): string {
    let current = text;
    for (let round = 0; round < 8; round++) {
      const next = current
        .replaceAll("+", " ")
        .replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) =>
          String.fromCharCode(Number.parseInt(hex, 16)),
        );
      if (next === current) {
        return current;
      }
      current = next;
    }
    return current;
  }

  /** True when any six characters of the key's secret body survive, in any decoding. */
  function leaksBody(text: string): boolean {
    const plain = decodedFully(text);
    for (let at = 0; at + 6 <= body.length; at++) {
      if (plain.includes(body.slice(at, at + 6))) {
        return true;
      }
    }
    return false;
  }

  it.each(Object.entries(forms))("scrubs a key %s down to its prefix and last four", (_, form) => {
    const scrubbed = scrubText(`GET /v1/leads?county=23&api_key=${form}&limit=5`);
    expect(leaksBody(scrubbed), scrubbed).toBe(false);
    expect(scrubbed).toMatch(/…oRzq&limit=5$/);
    expect(scrubbed.startsWith("GET /v1/leads?county=23&api_key=")).toBe(true);
  });

  it("writes no key tail in any form to a real logger's stream, request URL and message alike", () => {
    const { lines, logger } = capture();
    for (const form of Object.values(forms)) {
      logger.info(
        { method: "GET", url: `/v1/leads?key=${form}`, status: 401, ms: 1 },
        `request /v1/leads?key=${form}`,
      );
      logger.warn({ err: new Error(`bad key ${form}`) }, "refused");
    }
    expect(lines).toHaveLength(Object.keys(forms).length * 2);
    const written = JSON.stringify(lines);
    expect(leaksBody(written), written).toBe(false);
  });

  it("leaves escaped text that holds no secret as it was", () => {
    const url = "/v1/leads?city=FORT%20LAUDERDALE&owner=O%27NEIL+JR&q=50%25";
    expect(scrubText(url)).toBe(url);
    expect(scrubText("2026-11-29T00:00:00+00:00 whsec_ab+cd/ef==")).toBe(
      "2026-11-29T00:00:00+00:00 whsec_…ef==",
    );
  });
});

describe("tracing", () => {
  it("puts the active trace id on log lines", async () => {
    const { lines, logger } = capture();
    const traceId = await inSpan("op", {}, async (span) => {
      logger.info("inside");
      return span.spanContext().traceId;
    });
    expect(lines[0]?.trace_id).toBe(traceId);
  });

  it("carries a trace across a string carrier such as Kafka headers", async () => {
    const carrier: Record<string, string> = {};
    const parentTrace = await inSpan("produce", {}, async (span) => {
      injectContext(carrier);
      return span.spanContext().traceId;
    });
    expect(carrier.traceparent).toContain(parentTrace);
    const childTrace = await withExtractedContext(carrier, () =>
      inSpan("consume", {}, async (span) => span.spanContext().traceId),
    );
    expect(childTrace).toBe(parentTrace);
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual(
      expect.arrayContaining(["produce", "consume"]),
    );
  });
});
