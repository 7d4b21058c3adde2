import { describe, expect, test } from "bun:test";
import { RETRYABLE } from "../../../lib/core/retry_hint.ts";
import { type Category, CategorySchema, type Outcome } from "../../../lib/core/outcome.ts";
import {
  BACKOFF_BASE_MS,
  BACKOFF_CAP_MS,
  backoffMs,
  decideRetry,
  type RetryDecision,
} from "../../../lib/retry/policy.ts";

type Facts = Pick<Outcome, "status" | "error" | "retry">;
const failed = (category: Category, afterMs: number | null = null): Facts => ({
  status: "failed",
  error: { code: 503, message: "m", category, anchor: null, source: null },
  retry: { retryable: true, reason: "r", afterMs, at: null },
});
const ok: Facts = { status: "ok", error: null, retry: null };
const policy = (retries: number, maxWaitS = 300) => ({ retries, maxWaitMs: maxWaitS * 1000 });
const half = () => 0.5;

describe("decideRetry", () => {
  // [name, facts, sideEffects, attempt, retries, maxWaitS, expected]
  const rows: Array<[string, Facts, boolean, number, number, number, RetryDecision]> = [
    ["ok first try needs no decision", ok, false, 0, 2, 300, { kind: "none" }],
    ["ok after a retry settles it", ok, false, 1, 2, 300, {
      kind: "settled",
      why: "succeeded",
      reason: "retry 1 of 2 succeeded",
    }],
    ["cancelled retry is stopped", { ...ok, status: "cancelled" }, false, 2, 2, 300, {
      kind: "settled",
      why: "stopped",
      reason: "retry 2 of 2 was cancelled",
    }],
    ["capacity, no hint: backoff step 1", failed("capacity"), false, 0, 2, 300, {
      kind: "retry",
      attempt: 1,
      of: 2,
      afterMs: 3750,
      reason: "capacity",
    }],
    ["capacity, no hint: backoff step 2", failed("capacity"), false, 1, 2, 300, {
      kind: "retry",
      attempt: 2,
      of: 2,
      afterMs: 7500,
      reason: "capacity",
    }],
    ["rate limit honours the hint", failed("rate_limit", 72_000), false, 0, 1, 300, {
      kind: "retry",
      attempt: 1,
      of: 1,
      afterMs: 72_000,
      reason: "rate limit",
    }],
    ["network retries", failed("network"), false, 0, 3, 300, {
      kind: "retry",
      attempt: 1,
      of: 3,
      afterMs: 3750,
      reason: "network",
    }],
    ["quota within --retry-max-wait", failed("quota", 60_000), false, 0, 1, 300, {
      kind: "retry",
      attempt: 1,
      of: 1,
      afterMs: 60_000,
      reason: "quota",
    }],
    ["quota beyond --retry-max-wait", failed("quota", 147_166_000), false, 0, 1, 300, {
      kind: "settled",
      why: "not_retryable",
      reason: "quota resets in 40h52m, beyond --retry-max-wait 5m",
    }],
    ["quota without a reset time", failed("quota"), false, 0, 1, 300, {
      kind: "settled",
      why: "not_retryable",
      reason: "quota gave no reset time",
    }],
    ["a hint beyond --retry-max-wait", failed("capacity", 600_000), false, 0, 1, 300, {
      kind: "settled",
      why: "not_retryable",
      reason: "the backend asks to wait 10m for capacity, beyond --retry-max-wait 5m",
    }],
    ["auth is never retried", failed("auth"), false, 0, 5, 300, {
      kind: "settled",
      why: "not_retryable",
      reason: "auth is not retryable",
    }],
    ["a silence timeout is never retried", failed("timeout"), false, 0, 5, 300, {
      kind: "settled",
      why: "not_retryable",
      reason: "timeout is not retryable",
    }],
    ["unknown is never retried", failed("unknown"), false, 0, 5, 300, {
      kind: "settled",
      why: "not_retryable",
      reason: "unknown is not retryable",
    }],
    ["after output, never retried", failed("capacity"), true, 0, 5, 300, {
      kind: "settled",
      why: "not_retryable",
      reason: "output was already sent, so capacity is not retried",
    }],
    ["retries off", failed("capacity"), false, 0, 0, 300, {
      kind: "settled",
      why: "off",
      reason: "retries are off",
    }],
    ["retries exhausted", failed("capacity"), false, 2, 2, 300, {
      kind: "settled",
      why: "exhausted",
      reason: "2 of 2 retries used",
    }],
    ["backoff capped by --retry-max-wait", failed("capacity"), false, 0, 2, 1, {
      kind: "retry",
      attempt: 1,
      of: 2,
      afterMs: 750,
      reason: "capacity",
    }],
  ];
  for (const [name, outcome, sideEffects, attempt, retries, maxWaitS, want] of rows) {
    test(name, () => {
      expect(decideRetry({ outcome, sideEffects, attempt }, policy(retries, maxWaitS), half))
        .toEqual(want);
    });
  }
});

describe("one definition of retryable: classify's RETRYABLE", () => {
  for (const category of CategorySchema.options) {
    const retryable = RETRYABLE.has(category);
    test(`${category}: ${retryable ? "retried" : "not retried"}`, () => {
      // A reset time, so that quota's own rule does not hide the category's.
      const d = decideRetry(
        { outcome: failed(category, 1000), sideEffects: false, attempt: 0 },
        policy(1),
        half,
      );
      expect(d.kind).toBe(retryable ? "retry" : "settled");
    });
  }
  test("a silence timeout is not retryable (classify says so)", () => {
    expect(RETRYABLE.has("timeout")).toBe(false);
  });
});

describe("backoffMs", () => {
  test("doubles per retry from the base, within [50%, 100%] of the step, capped", () => {
    const steps = [1, 2, 3, 4, 5, 6].map((k) => [backoffMs(k, () => 0), backoffMs(k, () => 1)]);
    expect(steps).toEqual([
      [2500, 5000],
      [5000, 10_000],
      [10_000, 20_000],
      [20_000, 40_000],
      [30_000, 60_000],
      [30_000, 60_000],
    ]);
    expect(BACKOFF_BASE_MS).toBe(5000);
    expect(BACKOFF_CAP_MS).toBe(60_000);
  });
});
