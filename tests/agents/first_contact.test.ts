/**
 * The first-contact figure's counting (tests/agents/first_contact.ts): a turn is right on
 * status, category and retryability; a failed turn is neither `ok` nor `cancelled`; the truth
 * of a fixture is its top level and `earlier`, never its `blindSpot`.
 */
import { expect, test } from "bun:test";
import type { Outcome } from "../../lib/core/outcome.ts";
import { figures, right, type Told, truths } from "./first_contact.ts";
import type { Verdict } from "./expected.ts";

const verdict = (
  status: Verdict["status"],
  category: Verdict["category"] = null,
  retryable: boolean | null = null,
): Verdict => ({ status, category, retryable, why: "read in the recording" });

const outcome = (status: string, category: string | null, retryable: boolean | null) =>
  ({
    status,
    error: category === null ? null : { category },
    retry: retryable === null ? null : { retryable },
  }) as unknown as Outcome;

const told = (truth: Verdict, o: Outcome | undefined, agent = "a"): Told => ({
  agent,
  scenario: "s",
  turn: 1,
  truth,
  outcome: o,
});

test("a turn is right on status, category and retryability alike", () => {
  const truth = verdict("failed", "rate_limit", true);
  expect(right(told(truth, outcome("failed", "rate_limit", true)))).toBe(true);
  expect(right(told(truth, outcome("truncated", "rate_limit", true)))).toBe(false);
  expect(right(told(truth, outcome("failed", "unknown", true)))).toBe(false);
  expect(right(told(truth, outcome("failed", "rate_limit", false)))).toBe(false);
  expect(right(told(truth, undefined))).toBe(false);
  expect(right(told(verdict("ok"), outcome("ok", null, null)))).toBe(true);
});

test("failed turns are those whose truth is neither ok nor cancelled; a total comes last", () => {
  const rows = figures([
    told(verdict("failed", "auth", false), outcome("failed", "auth", false)),
    told(verdict("truncated", "network", true), outcome("ok", null, null)),
    told(verdict("cancelled"), outcome("cancelled", null, null)),
    told(verdict("ok"), outcome("ok", null, null), "b"),
  ]);
  expect(rows).toEqual([
    { agent: "a", failed: 2, failedRight: 1, turns: 3, turnsRight: 2 },
    { agent: "b", failed: 0, failedRight: 0, turns: 1, turnsRight: 1 },
    { agent: "total", failed: 2, failedRight: 1, turns: 4, turnsRight: 3 },
  ]);
});

test("the truth is the top level and earlier turns, never the blind spot", () => {
  const last = verdict("failed", "quota", false);
  const first = verdict("failed", "capacity", true);
  const got = truths({
    ...last,
    earlier: [first],
    blindSpot: verdict("failed", "rate_limit", true),
  });
  expect(got).toEqual([first, last]);
});
