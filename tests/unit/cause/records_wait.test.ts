/**
 * Waiting for a turn's end in its session records (lib/cause/records_wait.ts), with a fake
 * clock and fake reads: the wait stops at once when the end is there, reads until it lands,
 * gives up at the bound, and stops after one last read once nothing more can land. The end
 * rule itself (`turnEnded`) is a table.
 */
import { describe, expect, test } from "bun:test";
import { type ReadEvent, turnEnded, turnSpan } from "../../../lib/cause/record_evidence.ts";
import type { RecordEvent } from "../../../lib/plugin/api.ts";
import {
  readersShowEnd,
  type RecordsWaitIo,
  turnRecords,
  waitForEnd,
} from "../../../lib/cause/records_wait.ts";
import type { RecordsRead, SessionRecord } from "../../../lib/cause/session_records.ts";
import claudeRecords from "../../../plugins/claude_records.ts";
import type { LoadedRecordReader } from "../../../lib/plugin/api.ts";

const ev = (event: RecordEvent): ReadEvent => ({ event, reader: "r", path: "/f", offset: 0 });
const PROMPT = ev({ kind: "prompt" });
const FIRST = ev({ kind: "prompt", answerFirst: true });
const FINAL = ev({ kind: "reply", final: true, text: "4" });
const CALL = ev({ kind: "reply", final: false });
const ERROR = ev({ kind: "error", cause: "API Error: 529 Overloaded" });
const RETRYING = ev({ kind: "error", cause: "API Error: 529 Overloaded", retrying: true });
const STOP = ev({ kind: "stop", stopReason: "max_tokens" });
const ABORTED = ev({ kind: "aborted", cause: "aborted" });
const USAGE = ev({ kind: "usage", output: 9 });

describe("turnEnded: what ends a turn in its records", () => {
  const rows: [string, ReadEvent[], boolean][] = [
    ["nothing yet", [], false],
    ["a final reply without the turn's prompt (an earlier turn's)", [FINAL], false],
    ["the prompt alone", [PROMPT], false],
    ["the prompt, then a final reply", [PROMPT, FINAL], true],
    ["a final reply, then a tool call: more is coming", [PROMPT, FINAL, CALL], false],
    ["a tool call, then the final reply", [PROMPT, CALL, FINAL], true],
    ["an error the agent does not retry", [PROMPT, ERROR], true],
    ["an error the agent retries", [PROMPT, RETRYING], false],
    ["a retried error, then the final reply", [PROMPT, RETRYING, FINAL], true],
    ["a stop", [PROMPT, STOP], true],
    ["an abort", [PROMPT, ABORTED], true],
    ["usage after the final reply says nothing of the end", [PROMPT, FINAL, USAGE], true],
    ["usage alone", [PROMPT, USAGE], false],
    ["the turn's end, then a later turn's prompt", [PROMPT, FINAL, PROMPT], true],
    ["the turn's prompt, then a later turn's end", [PROMPT, PROMPT, FINAL], false],
    ["a prompt recorded answer-first: complete once answered", [FIRST], true],
    ["answer-first, whatever follows", [FIRST, RETRYING], true],
  ];
  for (const [name, events, want] of rows) {
    test(name, () => expect(turnEnded(events)).toBe(want));
  }

  test("an earlier turn's prompt landed late: the turn's own is the second", () => {
    // The earlier turn's prompt and error, then this turn's prompt, not yet its answer.
    const events = [PROMPT, ERROR, PROMPT];
    expect(turnEnded(events, 1)).toBe(true); // what the earlier turn ends on
    expect(turnSpan(events, 2)).toEqual({ prompts: 2, cut: null, ended: false });
    expect(turnEnded([...events, FINAL], 2)).toBe(true);
  });

  test("a later turn's events are not the turn's: they begin at the next prompt", () => {
    expect(turnSpan([PROMPT, RETRYING, PROMPT, FINAL], 1)).toEqual({
      prompts: 1,
      cut: 2,
      ended: false,
    });
  });
});

describe("turnRecords: the turn's part of a read", () => {
  const rec = (record: unknown, offset: number): SessionRecord => ({
    path: "/s.jsonl",
    offset,
    record,
  });
  const LATER = { type: "user", message: { role: "user", content: "And 3+3?" } };
  const read: RecordsRead = {
    records: [rec(USER, 0), rec(ANSWER, 10), rec(LATER, 20), rec(ANSWER, 30)],
    diagnostics: [],
  };

  test("the first turn's part ends before the next prompt", () => {
    const t = turnRecords(read, READERS, 1);
    expect(t.ended).toBe(true);
    expect(t.read.records.map((r) => r.offset)).toEqual([0, 10]);
  });

  test("the second prompt's part is the rest", () => {
    const t = turnRecords(read, READERS, 2);
    expect(t.ended).toBe(true);
    expect(t.prompts).toBe(2);
    expect(t.read.records.length).toBe(4);
  });
});

/** A fake clock and a fake file whose records land at given times. */
function fakeRecords(landing: { at: number; record: unknown }[], done?: () => boolean) {
  let now = 0;
  let reads = 0;
  const sleeps: number[] = [];
  const io: RecordsWaitIo = {
    now: () => now,
    sleep: (ms) => {
      sleeps.push(ms);
      now += ms;
      return Promise.resolve();
    },
    read: () => {
      reads++;
      const records: SessionRecord[] = landing.filter((l) => l.at <= now).map((l, i) => ({
        path: "/s.jsonl",
        offset: i,
        record: l.record,
      }));
      return Promise.resolve({ records, diagnostics: [] });
    },
    done,
  };
  return { io, reads: () => reads, sleeps, now: () => now };
}

const READERS = claudeRecords.readers as LoadedRecordReader[];
const ended = (r: RecordsRead) => turnRecords(r, READERS);
const USER = { type: "user", message: { role: "user", content: "What is 2+2?" } };
const ANSWER = { type: "assistant", message: { content: [{ type: "text", text: "4." }] } };

describe("waitForEnd", () => {
  test("the built-in readers declare their turn's end", () => {
    expect(readersShowEnd(READERS)).toBe(true);
    expect(readersShowEnd([{ ...READERS[0], endsTurn: undefined }])).toBe(false);
  });

  test("the end already there: one read, no wait", async () => {
    const f = fakeRecords([{ at: 0, record: USER }, { at: 0, record: ANSWER }]);
    const w = await waitForEnd(f.io, ended, 3000);
    expect(w.ended).toBe(true);
    expect(f.reads()).toBe(1);
    expect(f.sleeps).toEqual([]);
    expect(w.read.records.length).toBe(2);
  });

  test("the end lands late: read again until it is there, then stop at once", async () => {
    const f = fakeRecords([{ at: 0, record: USER }, { at: 700, record: ANSWER }]);
    const w = await waitForEnd(f.io, ended, 3000);
    expect(w.ended).toBe(true);
    expect(w.read.records.length).toBe(2);
    // Stopped within one pause of the landing, never at the bound.
    expect(f.now()).toBeGreaterThanOrEqual(700);
    expect(f.now()).toBeLessThan(700 + 100 + 1);
  });

  test("the end never lands: the wait ends at the bound with what was there", async () => {
    const f = fakeRecords([{ at: 0, record: USER }]);
    const w = await waitForEnd(f.io, ended, 3000);
    expect(w.ended).toBe(false);
    expect(w.waitedMs).toBe(3000);
    expect(f.now()).toBe(3000);
    expect(w.read.records.length).toBe(1);
  });

  test("a bound of 0 reads once", async () => {
    const f = fakeRecords([{ at: 0, record: USER }, { at: 10, record: ANSWER }]);
    const w = await waitForEnd(f.io, ended, 0);
    expect(w.ended).toBe(false);
    expect(f.reads()).toBe(1);
  });

  test("nothing more can land (the agent exited): one last read, then no more", async () => {
    let gone = false;
    const f = fakeRecords([{ at: 0, record: USER }, { at: 20_000, record: ANSWER }], () => gone);
    const io = { ...f.io, sleep: (ms: number) => f.io.sleep(ms).then(() => void (gone = true)) };
    const w = await waitForEnd(io, ended, 30_000);
    expect(w.ended).toBe(false);
    expect(f.reads()).toBe(2);
  });
});
