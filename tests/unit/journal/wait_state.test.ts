import { describe, expect, test } from "bun:test";
import type { JournalRecord, SettledWhy } from "../../../lib/journal/records.ts";
import type { Outcome } from "../../../lib/core/outcome.ts";
import {
  formatLog,
  logRow,
  printReport,
  retryLine,
  stateLine,
  waitRow,
} from "../../../lib/journal/report.ts";
import { foldRecords, latestTurn, recentTurns, verdict } from "../../../lib/journal/fold.ts";
import { capacityError, testOutcome } from "../../helpers/outcome.ts";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const common = (turn = 1, session = "s1", name = "w1") => ({
  ts: iso(turn * 1000),
  name,
  session,
  turn,
  pid: 4242,
});
const CAUSE = "UNAVAILABLE (code 503): The model is overloaded.";

function outcome(status: Outcome["status"], text = ""): Outcome {
  return testOutcome(status, text, {
    agent: "agy",
    startedAt: iso(0),
    endedAt: iso(1500),
    durationMs: 1500,
    error: status === "failed" ? capacityError(CAUSE) : null,
  });
}

const S = (turn = 1, session = "s1", name = "w1"): JournalRecord => ({
  ...common(turn, session, name),
  event: "turn_started",
  mode: "run",
  agent: "agy",
  promptId: null,
});
const E = (attempt: number, status: Outcome["status"], text = "", turn = 1): JournalRecord => ({
  ...common(turn),
  event: "turn_ended",
  attempt,
  outcome: outcome(status, text),
});
const SCH = (attempt: number, of = 2, turn = 1): JournalRecord => ({
  ...common(turn),
  event: "retry_scheduled",
  attempt,
  of,
  afterMs: 72_000,
  nextAt: iso(100_000),
  reason: "capacity",
});
const RS = (attempt: number, of = 2): JournalRecord => ({
  ...common(),
  event: "retry_started",
  attempt,
  of,
});
const SET = (
  attempt: number,
  why: SettledWhy,
  reason: string,
  of = 2,
  turn = 1,
): JournalRecord => ({
  ...common(turn),
  event: "retry_settled",
  attempt,
  of,
  why,
  reason,
});

describe("fold: where the latest turn stands", () => {
  // [name, records, verdict, retry row state, state line]
  const rows: Array<
    [string, JournalRecord[], string, "waiting" | "settled" | "unknown" | null, string]
  > = [
    ["started only: running", [S()], "running", null, "w1  running: turn 1"],
    ["ended ok", [S(), E(0, "ok", "hi")], "done ok", null, "w1  ready: turn ok"],
    [
      "decision then failed end",
      [S(), SCH(1), E(0, "failed")],
      "done failed",
      "waiting",
      "w1  ready: turn failed, retry waits",
    ],
    [
      "decision written, end not yet: still running",
      [S(), SCH(1)],
      "running",
      null,
      "w1  running: turn 1",
    ],
    [
      "failed end without decision: pending",
      [S(), E(0, "failed")],
      "pending",
      "unknown",
      "w1  ready: turn failed",
    ],
    [
      "a late decision still counts",
      [S(), E(0, "failed"), SCH(1)],
      "done failed",
      "waiting",
      "w1  ready: turn failed, retry waits",
    ],
    [
      "retry running",
      [S(), SCH(1), E(0, "failed"), RS(1)],
      "running",
      null,
      "w1  running: turn 1 (retry 1 of 2)",
    ],
    [
      "retry succeeded",
      [
        S(),
        SCH(1),
        E(0, "failed"),
        RS(1),
        SET(1, "succeeded", "retry 1 of 2 succeeded"),
        E(1, "ok", "yes"),
      ],
      "done ok",
      "settled",
      "w1  ready: turn ok",
    ],
    [
      "second retry waits",
      [S(), SCH(1), E(0, "failed"), RS(1), SCH(2), E(1, "failed")],
      "done failed",
      "waiting",
      "w1  ready: turn failed, retry waits",
    ],
    [
      "a decision for an earlier attempt does not decide the new one",
      [S(), SCH(1), E(0, "failed"), RS(1), E(1, "failed")],
      "pending",
      "unknown",
      "w1  ready: turn failed",
    ],
    [
      "waiting retry stopped",
      [S(), SCH(1), E(0, "failed"), SET(0, "stopped", "retry 1 of 2 was stopped before it ran")],
      "done failed",
      "settled",
      "w1  ready: turn failed",
    ],
    [
      "retries off",
      [S(), SET(0, "off", "retries are off", 0), E(0, "failed")],
      "done failed",
      "settled",
      "w1  ready: turn failed",
    ],
    [
      "exhausted",
      [
        S(),
        SCH(1),
        E(0, "failed"),
        RS(1),
        SCH(2),
        E(1, "failed"),
        RS(2),
        SET(2, "exhausted", "2 of 2 retries used"),
        E(2, "failed"),
      ],
      "done failed",
      "settled",
      "w1  ready: turn failed",
    ],
    [
      "the turn's start was rotated away",
      [SCH(1), E(0, "failed")],
      "done failed",
      "waiting",
      "w1  ready: turn failed, retry waits",
    ],
    [
      "the next turn started: it is the latest",
      [S(), E(0, "ok", "a"), S(2)],
      "running",
      null,
      "w1  running: turn 2",
    ],
  ];
  for (const [name, records, want, retryState, line] of rows) {
    test(name, () => {
      const turn = latestTurn(foldRecords(records))!;
      const v = verdict(turn);
      expect(v.kind === "done" ? `done ${v.failed ? "failed" : "ok"}` : v.kind).toBe(want);
      expect(turn.running ? null : waitRow(turn).retry?.state ?? null).toBe(retryState);
      expect(stateLine(turn)).toBe(line);
    });
  }
});

describe("latestTurn", () => {
  const state = foldRecords([
    S(1, "a", "w1"),
    S(1, "b", "w2"),
    S(1, "c", "w1"),
    S(2, "b", "w2"),
  ]);
  const rows: Array<[string | undefined, string | null]> = [
    [undefined, "b"],
    ["a", "a"],
    ["w1", "c"],
    ["w2", "b"],
    ["nope", null],
  ];
  for (const [target, want] of rows) {
    test(`${target} -> ${want}`, () => {
      expect(latestTurn(state, target)?.session ?? null).toBe(want);
    });
  }
  test("recentTurns lists the latest turns in start order", () => {
    expect(recentTurns(state, 3).map((t) => `${t.session}#${t.turn}`)).toEqual([
      "b#1",
      "c#1",
      "b#2",
    ]);
  });
});

describe("reports", () => {
  const NOW = T0 + 28_000; // nextAt is T0+100s: 72 s to go
  const turnOf = (records: JournalRecord[]) => latestTurn(foldRecords(records))!;

  test("the classic bug: a failed turn that said nothing never shows the turn before it", () => {
    const records = [
      S(1),
      E(0, "ok", "the answer before", 1),
      S(2),
      SET(0, "off", "retries are off", 0, 2),
      E(0, "failed", "", 2),
    ];
    // What a naive reader does: the last non-empty reply.
    const naive = records.flatMap((r) =>
      r.event === "turn_ended" && r.outcome.reply.text ? [r.outcome.reply.text] : []
    ).at(-1);
    expect(naive).toBe("the answer before");
    const report = printReport(turnOf(records), "w1", NOW);
    expect(report).toBe(
      `w1  ready: turn failed\nerror: ${CAUSE}\nno retry waits (retries are off)\n`,
    );
    expect(report).not.toContain("the answer before");
  });

  test("a waiting retry: state, cause, and when it runs", () => {
    const turn = turnOf([S(), SCH(1), E(0, "failed")]);
    expect(printReport(turn, "w1", NOW)).toBe(
      "w1  ready: turn failed, retry waits\n" +
        `error: ${CAUSE}\n` +
        "retry 1 of 2 waits out capacity; the next attempt runs in 1m12s (turnguard retry w1 runs it now)\n",
    );
  });

  test("a failed turn prints its own partial reply", () => {
    const turn = turnOf([
      S(),
      SET(0, "not_retryable", "output was already sent, so capacity is not retried"),
      E(0, "failed", "partial answer"),
    ]);
    expect(printReport(turn, "w1", NOW)).toBe(
      "w1  ready: turn failed\n" +
        `error: ${CAUSE}\n` +
        "partial answer\n" +
        "no retry waits (output was already sent, so capacity is not retried)\n",
    );
  });

  test("an ok turn prints its reply and nothing else", () => {
    expect(printReport(turnOf([S(), E(0, "ok", "the answer\n")]), "w1", NOW)).toBe("the answer\n");
  });

  test("a retry due now, and one long overdue", () => {
    const turn = turnOf([S(), SCH(1), E(0, "failed")]);
    expect(retryLine(turn, "s1", T0 + 100_000)).toBe(
      "retry 1 of 2 waits out capacity; the next attempt is due now (turnguard retry s1 runs it now)",
    );
    expect(retryLine(turn, "s1", T0 + 400_000)).toBe(
      "retry 1 of 2 waits out capacity; it was due 5m ago and has not started (its process, pid 4242, may be gone)",
    );
  });

  test("the --json row", () => {
    expect(waitRow(turnOf([S(), SCH(1), E(0, "failed", "part")]))).toEqual({
      name: "w1",
      session: "s1",
      turn: 1,
      status: "failed",
      error: { code: 503, message: CAUSE, category: "capacity", anchor: null, source: null },
      retry: {
        state: "waiting",
        attempt: 1,
        of: 2,
        reason: "capacity",
        nextAt: "2026-01-01T00:01:40.000Z",
        why: null,
      },
      reply: "part",
      agentAttempts: null,
    });
  });

  test("log: one aligned line per turn", () => {
    const state = foldRecords([
      S(1),
      E(0, "ok", "a", 1),
      S(2),
      SCH(1, 2, 2),
      E(0, "failed", "", 2),
      S(3),
    ]);
    expect(formatLog(recentTurns(state, 10), T0)).toBe(
      "2026-01-01T00:00:01Z  w1  s1  #1  ok       -         1.5s\n" +
        "2026-01-01T00:00:02Z  w1  s1  #2  failed   capacity  1.5s  retry 1/2 waits\n" +
        "2026-01-01T00:00:03Z  w1  s1  #3  running  -         -\n",
    );
    expect(logRow(latestTurn(state)!)).toEqual({
      startedAt: "2026-01-01T00:00:03.000Z",
      name: "w1",
      session: "s1",
      turn: 3,
      status: "running",
      category: null,
      durationMs: null,
      attempts: 1,
      retry: null,
      error: null,
      agentAttempts: null,
    });
  });
});
