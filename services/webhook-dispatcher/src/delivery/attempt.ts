import { inSpan, traceContextOf, withExtractedContext } from "@th/telemetry";
import { signatureHeader } from "@th/webhooks";
import type { ClaimedRow } from "../db/deliveries.ts";
import type { AttemptResult } from "../domain/schedule.ts";
import type { SecretStore } from "./secret-store.ts";
import { type Sender, USER_AGENT } from "./sender.ts";

/** What one attempt sent and what came back. */
export interface Sent {
  attemptNo: number;
  startedAt: Date;
  result: AttemptResult;
  /** The attempt span's trace context: the receiver got it, and the attempt's events carry it. */
  trace: Record<string, string>;
}

/**
 * One signed attempt in its own span, a child of the trace the delivery was created in (the
 * `match.found` record's); the receiver gets that span's `traceparent`. `answered` runs as soon
 * as the receiver answered (or failed); `then` runs inside the span with what was sent, so the
 * events the attempt records are published in it.
 */
export function attemptDelivery(
  deps: { secrets: SecretStore; sender: Sender; now: () => number },
  row: ClaimedRow,
  answered: () => void,
  then: (sent: Sent) => Promise<void>,
): Promise<void> {
  return withExtractedContext(row.trace_context ?? {}, () =>
    inSpan(
      "webhook POST",
      {
        "webhook.id": row.id,
        "webhook.endpoint_id": row.endpoint_id,
        "webhook.attempt": row.attempts + 1,
        "webhook.replay": row.replay_no,
        "th.tenant_id": row.tenant_id,
      },
      async (span) => {
        const secret = await deps.secrets.signingSecret(row.endpoint_id);
        const attemptNo = row.attempts + 1;
        const startedAt = new Date(deps.now());
        const signature = signatureHeader(row.body, secret, Math.floor(startedAt.getTime() / 1000));
        const trace = traceContextOf();
        const result = await deps.sender
          .send(row.url, row.body, {
            ...trace,
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "x-flpf-signature": signature,
            "x-flpf-event-type": row.event_type,
            "x-flpf-webhook-id": row.id,
          })
          .finally(answered);
        if (result.kind === "response") {
          span.setAttribute("http.response.status_code", result.status);
        } else {
          span.setAttribute("webhook.failure", result.failure);
        }
        await then({ attemptNo, startedAt, result, trace });
      },
    ),
  );
}
