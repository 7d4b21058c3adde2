import { describe, expect, test } from "bun:test";
import { earlyCause, endEarly } from "../../../lib/core/end_early.ts";
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
    ["a quota with a reset time is waited out, not cut", [["quota", true]], true, null],
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
