/**
 * A turn's revised Outcome in the journal (`turn_revised`: the session records' end landed
 * after records_wait_ms): the fold takes the revision as the turn's Outcome, `wait` and
 * `log` show it and what the turn was first recorded as.
 */
import { describe, expect, test } from "bun:test";
import { formatRecord, type JournalRecord, parseRecordLine } from "../../../lib/journal/records.ts";
import type { Outcome } from "../../../lib/core/outcome.ts";
import {
  formatLog,
  logRow,
  printReport,
  revisionNote,
  stateLine,
  waitRow,
} from "../../../lib/journal/report.ts";
import { foldRecords, latestTurn, verdict } from "../../../lib/journal/fold.ts";
import { TurnRecorder } from "../../../lib/retry/turn_recorder.ts";
import { capacityError, testOutcome } from "../../helpers/outcome.ts";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(T0 + ms).toISOString();
const common = (turn = 1) => ({ ts: iso(turn * 1000), name: "w1", session: "s1", turn, pid: 4242 });
const CAUSE = "API Error: 529 Overloaded";

function outcome(status: Outcome["status"], text = ""): Outcome {
  return testOutcome(status, text, {
    agent: "claude",
    startedAt: iso(0),
    endedAt: iso(1500),
    durationMs: 1500,
    error: status === "failed" ? capacityError(CAUSE) : null,
  });
}

const S = (turn = 1): JournalRecord => ({
  ...common(turn),
  event: "turn_started",
  mode: "proxy",
  agent: "claude",
  promptId: 2,
});
const E = (attempt: number, status: Outcome["status"], turn = 1): JournalRecord => ({
  ...common(turn),
  event: "turn_ended",
  attempt,
  outcome: outcome(status, "The answer i"),
});
const R = (attempt: number, revision: number, status: Outcome["status"]): JournalRecord => ({
  ...common(),
  event: "turn_revised",
  attempt,
  revision,
  outcome: outcome(status, "The answer i"),
});
const SETTLED: JournalRecord = {
  ...common(),
  event: "retry_settled",
  attempt: 0,
  of: 0,
  why: "off",
  reason: "retries are off",
};

describe("turn_revised", () => {
  test("a line round-trips through the journal format", () => {
    const line = formatRecord(R(0, 1, "failed"));
    const parsed = parseRecordLine(line.trimEnd());
    expect("record" in parsed && parsed.record.event).toBe("turn_revised");
  });

  test("a revision number below 1 is no journal record", () => {
    const bad = formatRecord(R(0, 1, "failed")).replace('"revision":1', '"revision":0');
    expect("error" in parseRecordLine(bad.trimEnd())).toBe(true);
  });

  test("the fold takes the revision as the turn's Outcome, and keeps the first status", () => {
    const turn = latestTurn(foldRecords([S(), SETTLED, E(0, "ok"), R(0, 1, "failed")]))!;
    expect(turn.outcome?.status).toBe("failed");
    expect(turn.revised).toEqual({ revision: 1, from: "ok" });
    expect(verdict(turn)).toEqual({ kind: "done", failed: true });
  });

  test("a second revision keeps the status the turn was first recorded with", () => {
    const turn = latestTurn(
      foldRecords([S(), SETTLED, E(0, "ok"), R(0, 1, "truncated"), R(0, 2, "failed")]),
    )!;
    expect(turn.revised).toEqual({ revision: 2, from: "ok" });
  });

  test("a revision of an attempt that is not the last one ended is history", () => {
    const turn = latestTurn(foldRecords([S(), E(0, "failed"), E(1, "ok"), R(0, 1, "ok")]))!;
    expect(turn.revised).toBeUndefined();
    expect(turn.outcome?.status).toBe("ok");
  });

  test("an unrevised turn's rows carry no revision", () => {
    const turn = latestTurn(foldRecords([S(), SETTLED, E(0, "ok")]))!;
    expect("revised" in waitRow(turn)).toBe(false);
    expect("revised" in logRow(turn)).toBe(false);
    expect(revisionNote(turn)).toBeNull();
    expect(stateLine(turn)).toBe("w1  ready: turn ok");
  });

  test("wait and log show the revision and the first status", () => {
    const turn = latestTurn(foldRecords([S(), SETTLED, E(0, "ok"), R(0, 1, "failed")]))!;
    expect(waitRow(turn).status).toBe("failed");
    expect(waitRow(turn).revised).toEqual({ revision: 1, from: "ok" });
    expect(logRow(turn).revised).toEqual({ revision: 1, from: "ok" });
    expect(stateLine(turn)).toBe("w1  ready: turn failed (revised from ok)");
    expect(printReport(turn, "w1", T0)).toContain(`error: ${CAUSE}`);
    expect(revisionNote(turn)).toBe(
      "turn 1 was revised (revision 1): its session records landed late; first recorded ok, now failed",
    );
    expect(formatLog([turn], T0)).toContain("failed (revised from ok)");
  });

  test("the recorder journals a revision after the attempt's end", () => {
    const records: JournalRecord[] = [];
    const recorder = new TurnRecorder({
      journal: { append: (r) => records.push(r) },
      name: "w1",
      policy: { retries: 0, maxWaitMs: 1000 },
      owner: { pid: 4242 },
      writer: "w",
      now: () => T0,
    });
    // Telemetry hears of it too, the revision's number on its Outcome.
    const exported: string[] = [];
    recorder.exportTo({
      attemptEnded: (o) => void exported.push(`ended ${o.status}`),
      retryStopped: () => {},
      turnRevised: (o) => void exported.push(`revised ${o.status} ${o.revision}`),
      close: () => Promise.resolve(),
    });
    const key = { session: "s1", turn: 1 };
    recorder.ended(key, 0, outcome("ok"), false);
    recorder.revised(key, 0, 1, outcome("failed"));
    expect(records.map((r) => r.event)).toEqual(["turn_ended", "turn_revised"]);
    expect(exported).toEqual(["ended ok", "revised failed 1"]);
    const turn = latestTurn(foldRecords(records))!;
    expect(turn.outcome?.status).toBe("failed");
    expect(turn.revised?.from).toBe("ok");
  });
});
