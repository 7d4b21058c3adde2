import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { journalFiles, journalPath } from "../../../lib/journal/files.ts";
import { JournalReader, readJournal } from "../../../lib/journal/reader.ts";
import {
  formatRecord,
  JOURNAL_REPLY_BYTES,
  type JournalRecord,
  parseLineRecovering,
} from "../../../lib/journal/records.ts";
import { JournalWriter } from "../../../lib/journal/writer.ts";
import type { Outcome } from "../../../lib/core/outcome.ts";
import { utf8Length } from "../../../lib/text/text.ts";
import { TurnRecorder } from "../../../lib/retry/turn_recorder.ts";
import { replyNote } from "../../../lib/journal/report.ts";
import { journalWarns } from "../../../lib/cli/journal_flags.ts";
import { turnguard } from "../../helpers/cli.ts";
import { testOutcome } from "../../helpers/outcome.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-journal-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const started = (turn: number, session = "s1"): JournalRecord => ({
  ts: "2026-01-01T00:00:00.000Z",
  name: "w1",
  session,
  turn,
  pid: 42,
  event: "turn_started",
  mode: "run",
  agent: "agy",
  promptId: null,
});
const line = (r: JournalRecord) => formatRecord(r);
const turnsOf = (records: JournalRecord[]) => records.map((r) => r.turn);

describe("journal path", () => {
  const rows: Array<[string | undefined, Record<string, string>, string]> = [
    ["j.jsonl", { TURNGUARD_JOURNAL: "/env/j" }, "/cwd/j.jsonl"],
    [undefined, { TURNGUARD_JOURNAL: "rel/j" }, "/cwd/rel/j"],
    [undefined, { XDG_STATE_HOME: "/state", HOME: "/home/u" }, "/state/turnguard/journal.jsonl"],
    [
      undefined,
      { XDG_STATE_HOME: "relative", HOME: "/home/u" },
      "/home/u/.local/state/turnguard/journal.jsonl",
    ],
    [undefined, { HOME: "/home/u" }, "/home/u/.local/state/turnguard/journal.jsonl"],
    [
      undefined,
      { TURNGUARD_JOURNAL: "", HOME: "/home/u" },
      "/home/u/.local/state/turnguard/journal.jsonl",
    ],
  ];
  for (const [flag, env, want] of rows) {
    test(`--journal=${flag} env=${JSON.stringify(env)} -> ${want}`, () => {
      expect(journalPath(flag, env, "/cwd")).toBe(want);
    });
  }
});

describe("records", () => {
  test("a record is one line that starts with ts and round-trips", () => {
    const text = line(started(1));
    expect(text.startsWith('{"ts":"2026-01-01T00:00:00.000Z","name":"w1"')).toBe(true);
    expect(text.endsWith("}\n")).toBe(true);
    expect(text.indexOf("\n")).toBe(text.length - 1);
    expect(parseLineRecovering(text.trimEnd())).toEqual({
      records: [started(1)],
      error: null,
      torn: [],
    });
  });

  test("an invalid record is refused before it is written", () => {
    const bad = { ...started(1), turn: "one" } as unknown as JournalRecord;
    expect(() => formatRecord(bad)).toThrow();
  });

  test("a record glued behind a torn one is recovered", () => {
    const torn = line(started(1)).slice(0, 40);
    const parsed = parseLineRecovering(torn + line(started(2)).trimEnd());
    expect(parsed.records).toEqual([started(2)]);
    expect(parsed.error).toBe(
      "skipped a torn record (the record glued behind it at column 41 was kept)",
    );
  });
});

describe("reader: corrupt and torn lines are skipped with a diagnostic, never fatal", () => {
  test("every kind of bad line in one file", () => {
    const path = join(dir, "journal.jsonl");
    writeFileSync(
      path,
      line(started(1)) +
        "not json at all\n" +
        "\n" +
        '{"ts":"x","event":"turn_started"}\n' +
        line(started(2)).replace("\n", "\r\n") +
        '{"ts":"2026","event":"future_event","name":"w","session":"s","turn":1,"pid":1}\n' +
        line(started(3)).slice(0, 50) + line(started(4)) +
        line(started(5)) +
        line(started(6)).slice(0, 30), // a write in progress: held back, no diagnostic
    );
    const read = readJournal(path);
    expect(turnsOf(read.records)).toEqual([1, 2, 4, 5]);
    expect(read.diagnostics).toEqual([
      `journal ${path}:2: skipped a corrupt line: not JSON (JSON Parse error: Unexpected identifier "not")`,
      `journal ${path}:4: skipped a corrupt line: not a journal record (name: Invalid key: Expected "name" but received undefined)`,
      `journal ${path}:6: skipped a corrupt line: not a journal record (event: Invalid type: Expected ("turn_started" | "turn_ended" | "retry_scheduled" | "retry_started" | "retry_settled" | "agent_attempt" | "turn_revised") but received "future_event")`,
      `journal ${path}:7: skipped a torn record (the record glued behind it at column 51 was kept)`,
    ]);
  });

  test("a partial last line is held back until its write completes", () => {
    const path = join(dir, "journal.jsonl");
    const full = line(started(2));
    writeFileSync(path, line(started(1)) + full.slice(0, 25));
    const reader = new JournalReader(path);
    const first = reader.read();
    expect(turnsOf(first.records)).toEqual([1]);
    expect(first.diagnostics).toEqual([]);
    appendFileSync(path, full.slice(25));
    const second = reader.read();
    expect(turnsOf(second.records)).toEqual([2]);
    expect(second.diagnostics).toEqual([]);
    expect(reader.read().records).toEqual([]);
  });

  test("a missing journal reads as empty", () => {
    expect(readJournal(join(dir, "nope", "journal.jsonl"))).toEqual({
      torn: [],
      records: [],
      diagnostics: [],
      reset: false,
    });
  });

  test("a journal rewritten in place to the same size is read again from the start", () => {
    const path = join(dir, "journal.jsonl");
    writeFileSync(path, line(started(1)));
    const reader = new JournalReader(path);
    expect(turnsOf(reader.read().records)).toEqual([1]);
    writeFileSync(path, line(started(2))); // same inode, same size, other content
    const again = reader.read();
    expect(again.reset).toBe(true);
    expect(turnsOf(again.records)).toEqual([2]);
  });

  test("a truncated journal is read again from the start", () => {
    const path = join(dir, "journal.jsonl");
    const w = new JournalWriter({ path });
    for (let i = 1; i <= 3; i++) w.append(started(i));
    const reader = new JournalReader(path);
    expect(turnsOf(reader.read().records)).toEqual([1, 2, 3]);
    truncateSync(path, 0);
    w.append(started(9));
    const again = reader.read();
    expect(again.reset).toBe(true);
    expect(turnsOf(again.records)).toEqual([9]);
  });
});

describe("writer", () => {
  test("creates the journal's directory", () => {
    const path = join(dir, "a", "b", "journal.jsonl");
    new JournalWriter({ path }).append(started(1));
    expect(readFileSync(path, "utf8")).toBe(line(started(1)));
  });

  test("rotates by size, keeps N files, and the reader reads across them in order", () => {
    const path = join(dir, "journal.jsonl");
    const size = line(started(1)).length;
    const w = new JournalWriter({ path, rotateBytes: size * 10, keep: 2 });
    for (let i = 1; i <= 45; i++) w.append(started(i));
    expect(readdirSync(dir).sort()).toEqual([
      "journal.jsonl",
      "journal.jsonl.3",
      "journal.jsonl.4",
    ]);
    expect(journalFiles(path)).toEqual([`${path}.3`, `${path}.4`, path]);
    // Files 1 and 2 (turns 1-20) were dropped; the rest is whole and in order.
    const read = readJournal(path);
    expect(turnsOf(read.records)).toEqual(Array.from({ length: 25 }, (_, i) => i + 21));
    expect(read.diagnostics).toEqual([]);
    expect(existsSync(path + ".lock")).toBe(false);
  });

  test("an incremental reader follows a rotation without losing or repeating records", () => {
    const path = join(dir, "journal.jsonl");
    const size = line(started(1)).length;
    const w = new JournalWriter({ path, rotateBytes: size * 4, keep: 10 });
    const reader = new JournalReader(path);
    const seen: number[] = [];
    for (let i = 1; i <= 30; i++) {
      w.append(started(i));
      if (i % 3 === 0) seen.push(...turnsOf(reader.read().records));
    }
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  test("a lock left by a dead writer is broken once stale, a fresh one is respected", () => {
    const path = join(dir, "journal.jsonl");
    const size = line(started(1)).length;
    writeFileSync(path + ".lock", "");
    let clock = Date.now();
    const w = new JournalWriter({ path, rotateBytes: size * 2, now: () => clock });
    w.append(started(1));
    w.append(started(2));
    expect(readdirSync(dir).sort()).toEqual(["journal.jsonl", "journal.jsonl.lock"]);
    clock += 60_000;
    w.append(started(3));
    expect(readdirSync(dir).sort()).toEqual(["journal.jsonl.1"]);
    expect(turnsOf(readJournal(path).records)).toEqual([1, 2, 3]);
  });

  test("a torn last line of a rotated file is reported once the file is rotated", () => {
    const path = join(dir, "journal.jsonl");
    writeFileSync(`${path}.1`, line(started(1)) + line(started(2)).slice(0, 20));
    writeFileSync(path, line(started(3)));
    const read = readJournal(path);
    expect(turnsOf(read.records)).toEqual([1, 3]);
    expect(read.diagnostics).toEqual([`journal ${path}.1:2: skipped a torn last line`]);
  });
});

describe("a journaled reply is bounded", () => {
  const outcome = (text: string): Outcome =>
    testOutcome("ok", text, {
      agent: "agy",
      startedAt: "2026-01-01T00:00:00.000Z",
      endedAt: "2026-01-01T00:00:01.000Z",
      durationMs: 1000,
    });
  const record = (text: string) => {
    const records: JournalRecord[] = [];
    const recorder = new TurnRecorder({
      journal: { append: (r) => void records.push(r) },
      name: "w1",
      policy: { retries: 0, maxWaitMs: 1000 },
      owner: { pid: 42 },
      now: () => 0,
    });
    const given = outcome(text);
    recorder.ended({ session: "s1", turn: 1 }, 0, given, true);
    expect(given.reply.text).toBe(text); // the caller's outcome is left whole
    const ended = records.find((r) => r.event === "turn_ended");
    if (ended?.event !== "turn_ended") throw new Error("no turn_ended");
    return ended;
  };

  test("a long reply keeps its first 64 KiB, cut on a character, and is marked", () => {
    // 65535 ASCII bytes, then 3-byte characters: byte 65536 falls inside one.
    const text = "a".repeat(65_535) + "€".repeat(50_000);
    const ended = record(text);
    expect(JOURNAL_REPLY_BYTES).toBe(65_536);
    expect(ended.outcome.reply.text).toBe("a".repeat(65_535));
    expect(ended.outcome.reply.chars).toBe(text.length);
    expect(ended.replyTruncated).toBe(true);
    expect(formatRecord(ended).length).toBeLessThan(66_100);
    expect(replyNote(ended.outcome)).toBe(
      "only the first 65535 bytes of the reply (115535 characters) were kept",
    );
  });

  test("a reply of exactly 64 KiB is kept whole and not marked", () => {
    const text = "é".repeat(32_768);
    const ended = record(text);
    expect(utf8Length(text)).toBe(65_536);
    expect(ended.outcome.reply.text).toBe(text);
    expect("replyTruncated" in ended).toBe(false);
    expect(replyNote(ended.outcome)).toBe(null);
  });
});

describe("journaling adds nothing to stderr unless asked to", () => {
  // [--journal, $TURNGUARD_JOURNAL, --verbose, warns]
  const rows: Array<[string | undefined, string | undefined, boolean | undefined, boolean]> = [
    [undefined, undefined, undefined, false],
    [undefined, "", undefined, false],
    ["j.jsonl", undefined, undefined, true],
    [undefined, "/tmp/j.jsonl", undefined, true],
    [undefined, undefined, true, true],
  ];
  for (const [journal, env, verbose, want] of rows) {
    test(`--journal=${journal} TURNGUARD_JOURNAL=${env} --verbose=${verbose} -> ${want}`, () => {
      expect(journalWarns({ journal, verbose }, { TURNGUARD_JOURNAL: env })).toBe(want);
    });
  }

  test("run with an unwritable default journal: stderr stays the agent's own", async () => {
    // HOME is a regular file: the journal's directory cannot be made (even for root).
    const home = join(dir, "home-file");
    writeFileSync(home, "");
    const env = {
      HOME: home,
      XDG_STATE_HOME: undefined,
      XDG_CONFIG_HOME: join(dir, "config"),
      TURNGUARD_CONFIG: undefined,
      TURNGUARD_JOURNAL: undefined,
    };
    const agent = ["--", "sh", "-c", "echo out; echo err >&2"];
    const quiet = await turnguard(["run", ...agent], { env });
    expect([quiet.code, quiet.stdout, quiet.stderr]).toEqual([0, "out\n", "err\n"]);
    const cannot = /^turnguard: journal: cannot write \(.*\); turns are not journaled$/m;
    const verbose = await turnguard(["run", "--verbose", ...agent], { env });
    expect([verbose.code, verbose.stdout]).toEqual([0, "out\n"]);
    expect(verbose.stderr).toMatch(cannot);
    const named = await turnguard(["run", ...agent], {
      env: { ...env, TURNGUARD_JOURNAL: join(home, "journal.jsonl") },
    });
    expect([named.code, named.stdout]).toEqual([0, "out\n"]);
    expect(named.stderr).toMatch(cannot);
    expect(named.stderr.split("\n").filter((l) => l.startsWith("turnguard:")).length).toBe(1);
  }, 60_000);
});
