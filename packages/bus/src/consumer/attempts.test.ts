import { describe, expect, it } from "vitest";
import { PoisonRecordError } from "../serde.ts";
import {
  Attempts,
  afterBatchFailure,
  afterRecordFailure,
  batchAttemptKey,
  recordAttemptKey,
} from "./attempts.ts";

const never = () => false;
const always = () => true;

describe("Attempts", () => {
  it("numbers the first attempt 1 and the one after a failure the next", () => {
    const attempts = new Attempts();
    expect(attempts.next("k")).toBe(1);
    attempts.failed("k", 1);
    expect(attempts.next("k")).toBe(2);
    attempts.failed("k", 2);
    expect(attempts.next("k")).toBe(3);
  });

  it("counts outage tries apart from failures, so an outage never brings parking nearer", () => {
    const attempts = new Attempts();
    attempts.failed("k", 1);
    expect(attempts.outageTry("k")).toBe(1);
    expect(attempts.outageTry("k")).toBe(2);
    expect(attempts.next("k")).toBe(2);
  });

  it("forgets failures but keeps outage tries when a batch goes one record at a time", () => {
    const attempts = new Attempts();
    attempts.failed("k", 3);
    attempts.outageTry("k");
    attempts.forget("k");
    expect(attempts.next("k")).toBe(1);
    expect(attempts.outageTry("k")).toBe(2);
  });

  it("forgets failures and outage tries of a settled record", () => {
    const attempts = new Attempts();
    attempts.failed("k", 2);
    attempts.outageTry("k");
    attempts.settled("k");
    expect(attempts.next("k")).toBe(1);
    expect(attempts.outageTry("k")).toBe(1);
  });

  it("keys a batch apart from the record at its first offset", () => {
    expect(recordAttemptKey("t", 2, "7")).toBe("t/2/7");
    expect(batchAttemptKey("t", 2, "7")).toBe("batch:t/2/7");
  });
});

describe("afterRecordFailure", () => {
  it("parks an unreadable record at once, with the decoder's reason", () => {
    expect(afterRecordFailure(new PoisonRecordError("bad bytes"), 1, 5, always)).toEqual({
      kind: "park",
      reason: "bad bytes",
    });
  });

  it("waits out an unreachable store however many attempts were made", () => {
    expect(afterRecordFailure(new Error("down"), 9, 5, always)).toEqual({ kind: "outage" });
  });

  it("retries with doubling back-off below maxAttempts", () => {
    expect(afterRecordFailure(new Error("x"), 1, 5, never)).toEqual({
      kind: "retry",
      afterMs: 200,
    });
    expect(afterRecordFailure(new Error("x"), 3, 5, never)).toEqual({
      kind: "retry",
      afterMs: 800,
    });
  });

  it("parks after maxAttempts failures, saying how many and why", () => {
    expect(afterRecordFailure(new Error("boom"), 5, 5, never)).toEqual({
      kind: "park",
      reason: "handler failed 5 times: boom",
    });
  });
});

describe("afterBatchFailure", () => {
  it("waits out an unreachable store", () => {
    expect(afterBatchFailure(new Error("down"), 5, 5, always)).toEqual({ kind: "outage" });
  });

  it("retries the whole batch with back-off below maxAttempts", () => {
    expect(afterBatchFailure(new Error("x"), 2, 5, never)).toEqual({ kind: "retry", afterMs: 400 });
  });

  it("hands the records over one at a time once maxAttempts failed", () => {
    expect(afterBatchFailure(new Error("x"), 5, 5, never)).toEqual({ kind: "isolate" });
  });
});
