import { describe, expect, test } from "bun:test";
import { earlyCause, endEarly, QUOTA_CURABLE_MS } from "../../../lib/core/end_early.ts";
import { decide, type TurnFacts } from "../../../lib/core/decide.ts";
import type { AgentAttempt, Category } from "../../../lib/core/outcome.ts";

const attempt = (n: number, category: Category, retryable: boolean): AgentAttempt => ({
  n,
  at: "2026-12-01T00:00:00.000Z",
  cause: `cause ${n}`,
  category,
  retryable,
  source: { kind: "log", path: "/log" },
});

describe("endEarly: does --fail-fast end the turn now?", () => {
  // attempts (category, retryable), fail-fast on → ends on attempt n (null: goes on)
  const rows: [string, [Category, boolean][], boolean, number | null][] = [
    ["no attempt yet", [], true, null],
    ["a spent quota", [["quota", false]], true, 1],
    ["rejected credentials", [["auth", false]], true, 1],
    ["a model that does not exist", [["model", false]], true, 1],
    ["a prompt too long", [["context", false]], true, 1],
    ["the same, without --fail-fast", [["quota", false]], false, null],
    ["a rate limit is retryable", [["rate_limit", true]], true, null],
    ["an overloaded backend is retryable", [["capacity", true]], true, null],
    ["a network error is retryable", [["network", true]], true, null],
    ["a quota with a reset time (not known how far) is waited out", [["quota", true]], true, null],
    ["an unknown cause is never taken for a permanent one", [["unknown", false]], true, null],
    ["a crash is not the agent retrying a permanent cause", [["crash", false]], true, null],
    ["503s, then a quota: ends on the quota", [["capacity", true], ["quota", false]], true, 2],
    [
      "a quota, then a 503: the newest cause decides",
      [["quota", false], ["capacity", true]],
      true,
      null,
    ],
  ];
  for (const [name, seen, failFast, want] of rows) {
    test(name, () => {
      const attempts = seen.map(([c, r], i) => attempt(i + 1, c, r));
      const got = endEarly(attempts, failFast);
      expect(got?.attempt.n ?? null).toBe(want);
      if (got) expect(got.reason).toContain(`attempt ${want}`);
    });
  }
});

describe("endEarly: a quota with a reset time, against the agent's own retrying", () => {
  const MIN = 60_000;
  const DAY = 24 * 60 * MIN;
  // category, provider's reset from the attempt, the agent's announced next attempt → cut?
  const rows: [string, Category, number, number | undefined, boolean][] = [
    ["resets in 30 s, the agent tries in 1 s: waited out", "quota", 30_000, 1000, false],
    ["resets within the bound: waited out", "quota", QUOTA_CURABLE_MS, 1000, false],
    ["resets just past the bound: cut", "quota", QUOTA_CURABLE_MS + 1, 1000, true],
    ["a monthly limit, days away, retried every 0.5 s: cut", "quota", 3 * DAY, 543, true],
    ["a daily limit with no announced wait: cut", "quota", 8 * 60 * MIN, undefined, true],
    [
      "resets in 7 min, the agent's next try is in 10: waited out",
      "quota",
      7 * MIN,
      10 * MIN,
      false,
    ],
    ["its stated reset had already come and it still failed: cut", "quota", 0, 543, true],
    ["a rate limit an hour away is never cut", "rate_limit", 60 * MIN, 1000, false],
    ["an overloaded backend with a long wait is never cut", "capacity", DAY, 1000, false],
    ["a network error is never cut", "network", 0, 1000, false],
  ];
  for (const [name, category, reset, next, cut] of rows) {
    test(name, () => {
      const a: AgentAttempt = {
        ...attempt(1, category, true),
        retryAfterMs: reset,
        ...(next !== undefined ? { nextInMs: next } : {}),
      };
      expect(endEarly([a], true) !== null).toBe(cut);
    });
  }
  test("a reset days away stays the ended turn's retry time; one that had come is none", () => {
    const far = endEarly([{ ...attempt(2, "quota", true), retryAfterMs: 3 * DAY }], true)!;
    expect(earlyCause(far).retry).toMatchObject({
      retryable: true,
      afterMs: 3 * DAY,
      at: "2026-12-04T00:00:00.000Z",
    });
    const passed = endEarly([{ ...attempt(2, "quota", true), retryAfterMs: 0 }], true)!;
    expect(passed.reason).toContain("already come");
    expect(earlyCause(passed).retry).toMatchObject({ retryable: false, afterMs: null });
  });
});

describe("decide: a turn ended early fails with the attempt's cause", () => {
  const base: TurnFacts = {
    cancelled: false,
    exit: null,
    stopReason: null,
    agentError: null,
    output: 0,
    logCause: null,
    timeout: null,
  };
  const early = endEarly([attempt(3, "quota", false)], true)!;
  test("even when the agent was then stopped (run mode: killed by the stop)", () => {
    const d = decide({
      ...base,
      endedEarly: earlyCause(early),
      exit: { code: null, signal: "SIGTERM" },
    });
    expect([d.status, d.error?.category, d.error?.message, d.retry?.retryable]).toEqual([
      "failed",
      "quota",
      "cause 3",
      false,
    ]);
  });
  test("the agent's late cancelled answer does not make it cancelled", () => {
    const d = decide({ ...base, endedEarly: earlyCause(early), stopReason: "cancelled" });
    expect(d.status).toBe("failed");
  });
});
