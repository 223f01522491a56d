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
