/**
 * The agent's own attempts in the journal (`agent_attempt` records): the fold keeps their
 * count and the last few, a running turn reads `retrying: rate_limit, attempt 3, next in 8s
 * (the agent's own retry)` in `wait` and `log`, the `--json` rows carry them, and `wait`
 * tells each new one while it follows the journal.
 */
import { describe, expect, test } from "bun:test";
import type { AgentAttempt, Outcome } from "../../../lib/core/outcome.ts";
import { formatRecord, type JournalRecord, parseRecordLine } from "../../../lib/journal/records.ts";
import {
  AGENT_ATTEMPTS_KEPT,
  foldRecords,
  latestTurn,
  recentTurns,
  type TurnView,
} from "../../../lib/journal/fold.ts";
import {
  formatLog,
  logRow,
  printReport,
  progressLine,
  turnProgress,
  waitRow,
} from "../../../lib/journal/report.ts";
import { waitForTurn } from "../../../lib/cli/wait.ts";
import { testOutcome } from "../../helpers/outcome.ts";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const common = { ts: iso(0), name: "w1", session: "s1", turn: 1, pid: 4242 };

const S: JournalRecord = {
  ...common,
  event: "turn_started",
  mode: "proxy",
  agent: "qwen-code",
  promptId: 3,
};
/** Attempt `n`, seen at `n` seconds, the agent announcing its next in `nextInMs`. */
function A(n: number, over: Partial<AgentAttempt> = {}): JournalRecord {
  return {
    ...common,
    ts: iso(n * 1000),
    event: "agent_attempt",
    n,
    at: iso(n * 1000),
    cause: "429 You exceeded your current quota, please check your plan and billing details.",
    category: "rate_limit",
    code: 429,
    retryable: true,
    nextInMs: 8000,
    source: { kind: "records", path: "/home/u/.qwen/projects/p/chats/s1.jsonl" },
    ...over,
  };
}
const E = (status: Outcome["status"], attempt = 0): JournalRecord => ({
  ...common,
  ts: iso(60_000),
  event: "turn_ended",
  attempt,
  outcome: testOutcome(status, status === "ok" ? "4" : ""),
});
const RS = (attempt: number): JournalRecord => ({
  ...common,
  event: "retry_started",
  attempt,
  of: 2,
});

const turnOf = (records: JournalRecord[]): TurnView => latestTurn(foldRecords(records))!;

describe("fold: the agent's attempts of the running turn", () => {
  test("the record round-trips through a journal line", () => {
    const line = formatRecord(A(3));
    expect(parseRecordLine(line.trimEnd())).toEqual({ record: A(3) });
  });

  test("counted, the last few kept, the latest last", () => {
    const turn = turnOf([S, A(1), A(2), A(3)]);
    expect(turn.running).toBe(true);
    expect(turn.agentAttempts?.count).toBe(3);
    expect(turn.agentAttempts?.recent.map((a) => a.n)).toEqual([1, 2, 3]);
    const { ts: _ts, event: _event, name: _name, session: _s, turn: _t, pid: _pid, ...attempt } = A(
      3,
    ) as Extract<JournalRecord, { event: "agent_attempt" }>;
    expect(turn.agentAttempts?.recent[2]).toEqual(attempt);
  });

  test("bounded: a turn of thousands of attempts keeps their count and the last few", () => {
    const records: JournalRecord[] = [S];
    for (let n = 1; n <= 5000; n++) records.push(A(n));
    const turn = turnOf(records);
    expect(turn.agentAttempts?.count).toBe(5000);
    expect(turn.agentAttempts?.recent.map((a) => a.n)).toEqual(
      Array.from({ length: AGENT_ATTEMPTS_KEPT }, (_, i) => 5000 - AGENT_ATTEMPTS_KEPT + 1 + i),
    );
  });

  test("a retry of the turn starts its agent's attempts anew", () => {
    const turn = turnOf([S, A(1), A(2), E("failed"), RS(1), A(1, { at: iso(90_000) })]);
    expect(turn.agentAttempts?.count).toBe(1);
    expect(turn.agentAttempts?.recent.map((a) => a.at)).toEqual([iso(90_000)]);
    expect(turnOf([S, A(1), E("failed"), RS(1)]).agentAttempts).toBeNull();
  });

  test("none recorded: null", () => {
    expect(turnOf([S]).agentAttempts).toBeNull();
  });
});

describe("the progress line", () => {
  const attempt = (over: Partial<AgentAttempt> = {}): AgentAttempt => {
    const { n, at, cause, category, code, retryable, nextInMs, source } = A(3, over) as Extract<
      JournalRecord,
      { event: "agent_attempt" }
    >;
    return { n, at, cause, category, code, retryable, nextInMs, source };
  };

  test("the agent's announced wait, counted from when it was seen", () => {
    expect(progressLine(attempt(), T0 + 3000)).toBe(
      "retrying: rate_limit, attempt 3, next in 8s (the agent's own retry)",
    );
    expect(progressLine(attempt(), T0 + 9000)).toBe(
      "retrying: rate_limit, attempt 3, next in 2s (the agent's own retry)",
    );
    expect(progressLine(attempt(), T0 + 14_000)).toBe(
      "retrying: rate_limit, attempt 3, next was due 3s ago (the agent's own retry)",
    );
  });

  test("no announced wait: none is shown", () => {
    expect(progressLine(attempt({ nextInMs: undefined }), T0 + 3000)).toBe(
      "retrying: rate_limit, attempt 3 (the agent's own retry)",
    );
  });

  test("a cause retrying cannot cure says so", () => {
    expect(progressLine(attempt({ category: "quota", retryable: false }), T0 + 3000)).toBe(
      "retrying: quota, attempt 3, next in 8s (the agent's own retry; quota is not retryable)",
    );
  });

  test("only a running turn has progress", () => {
    expect(turnProgress(turnOf([S, A(1)]), T0 + 1000)).toBe(
      "retrying: rate_limit, attempt 1, next in 8s (the agent's own retry)",
    );
    expect(turnProgress(turnOf([S, A(1), E("ok")]), T0 + 1000)).toBeNull();
    expect(turnProgress(turnOf([S]), T0 + 1000)).toBeNull();
  });
});

describe("wait and log show it", () => {
  test("wait --print of a running turn: the state line, then the progress", () => {
    expect(printReport(turnOf([S, A(1), A(2)]), "w1", T0 + 4000)).toBe(
      "w1  running: turn 1\n" +
        "retrying: rate_limit, attempt 2, next in 6s (the agent's own retry)\n",
    );
  });

  test("the --json rows carry the count, the last few and when the agent tries next", () => {
    const turn = turnOf([S, A(1), A(2)]);
    const row = {
      count: 2,
      recent: turn.agentAttempts!.recent,
      nextAt: iso(10_000),
    };
    expect(waitRow(turn).agentAttempts).toEqual(row);
    expect(logRow(turn).agentAttempts).toEqual(row);
    expect(row.recent.map((a) => [a.n, a.category, a.nextInMs])).toEqual([
      [1, "rate_limit", 8000],
      [2, "rate_limit", 8000],
    ]);
    // An ended turn keeps what was seen of it; without an announced wait, no nextAt.
    const ended = turnOf([S, A(1, { nextInMs: undefined }), E("failed")]);
    expect(waitRow(ended).agentAttempts).toEqual({
      count: 1,
      recent: ended.agentAttempts!.recent,
      nextAt: null,
    });
  });

  test("log: a running turn's last column is its progress", () => {
    const state = foldRecords([S, A(1), A(2)]);
    expect(formatLog(recentTurns(state, 10), T0 + 4000)).toBe(
      "2026-01-01T00:00:00Z  w1  s1  #1  running  -  -  " +
        "retrying: rate_limit, attempt 2, next in 6s (the agent's own retry)\n",
    );
  });
});

describe("wait tells each new attempt while it follows the journal", () => {
  test("once per attempt, only while the turn runs", async () => {
    // Each read brings the next batch of records; the clock moves a second per wait.
    const batches: JournalRecord[][] = [[S], [A(1)], [], [A(2), A(3)], [], [A(4), E("ok")]];
    let now = T0;
    const told: string[] = [];
    const result = await waitForTurn("w1", 60_000, {
      read: () => ({ records: batches.shift() ?? [], torn: [], diagnostics: [], reset: false }),
      changes: {
        next: (ms) => {
          now += ms;
          return Promise.resolve();
        },
        close: () => {},
      },
      now: () => now,
      diagnostic: () => {},
      held: () => [],
      ownerAlive: () => true,
      progress: (turn) => told.push(turnProgress(turn, now)!),
    });
    expect(result.kind).toBe("done");
    // Attempt 4 came with the end: the report tells the rest.
    expect(told).toEqual([
      "retrying: rate_limit, attempt 1, next in 8s (the agent's own retry)",
      "retrying: rate_limit, attempt 3, next in 8s (the agent's own retry)",
    ]);
  });
});
