import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { bulkReplayNote, DeliveryRow, deliveriesQuery, Payload } from "./webhooks.tsx";

const delivery: Parameters<typeof DeliveryRow>[0]["delivery"] = {
  id: "dlv_1",
  folio: "23-0101",
  state: "dead_letter",
  parked_reason: null,
  attempts: 8,
  last_status_code: 500,
  last_failure: null,
  dead_letter_reason: "8 attempts failed",
  last_attempted_at: "2026-01-01T01:00:00.000Z",
};

function row(shown: typeof delivery, open = false) {
  return renderToStaticMarkup(
    <table>
      <tbody>
        <DeliveryRow
          endpoint={{ id: "wl_1", endpoint_id: "we_1" }}
          delivery={shown}
          open={open}
          toggle={() => {}}
          act={async () => {}}
        />
      </tbody>
    </table>,
  );
}

describe("the delivery log", () => {
  it("asks for one state's deliveries, or all of them, newest fifty", () => {
    expect(deliveriesQuery("")).toEqual({ limit: 50 });
    expect(deliveriesQuery("parked")).toEqual({ limit: 50, state: "parked" });
  });

  it("says how many deliveries a bulk replay queued when the API tells", () => {
    expect(bulkReplayNote(3)).toBe("Replay requested for 3 deliveries.");
    expect(bulkReplayNote(undefined)).toBe("Replay requested.");
  });

  it("offers a replay of a dead letter and shows why it died", () => {
    const html = row(delivery);
    expect(html).toContain("dead letter");
    expect(html).toContain("8 attempts failed");
    expect(html).toContain("Replay");
    expect(html).toContain('aria-expanded="false"');
  });

  it("offers no replay of a delivered one, and opens its attempts below it", () => {
    const html = row({ ...delivery, state: "complete", dead_letter_reason: null }, true);
    expect(html).not.toContain(">Replay<");
    expect(html).toContain('aria-expanded="true"');
    expect(html).toMatch(/<tr><td colspan="6">/i);
  });
});

describe("a delivery's payload", () => {
  const path = { id: "wl_1", endpoint_id: "we_1", delivery_id: "dlv_1" };
  const body = '{"match":{"owner":{"name":"A. OWNER"}}}';

  it("is shown as the log answers it for a delivery that was charged", () => {
    const html = renderToStaticMarkup(<Payload path={path} paid={body} />);
    expect(html).toContain("A. OWNER");
    expect(html).not.toContain("Show payload");
  });

  it("is offered for one lead-view, and not shown, for a delivery never charged", () => {
    const html = renderToStaticMarkup(<Payload path={path} paid={null} />);
    expect(html).toContain("Show payload · 1 lead-view");
    expect(html).not.toContain("OWNER");
  });
});
