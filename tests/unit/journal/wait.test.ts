import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JournalReader, readJournal } from "../../../lib/journal/reader.ts";
import type { JournalRecord } from "../../../lib/journal/records.ts";
import { JournalWriter } from "../../../lib/journal/writer.ts";
import type { Outcome } from "../../../lib/core/outcome.ts";
import { emptyState, foldRecords, latestTurn, verdict } from "../../../lib/journal/fold.ts";
import { BUN, FAKE_AGY, homeEnv, ROOT, runProcess, turnguard } from "../../helpers/cli.ts";
import { testOutcome } from "../../helpers/outcome.ts";

const FLAKY = join(ROOT, "tests", "fixtures", "retry", "flaky-agent");
const CAPACITY_CAUSE =
  "agent executor error: model unreachable: UNAVAILABLE (code 503): The model is overloaded. Please try again later.";

let home: string;
let journal: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tg-wait-"));
  journal = join(home, "state", "journal.jsonl");
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const env = (extra: Record<string, string> = {}) =>
  homeEnv(home, { TURNGUARD_JOURNAL: journal, FLAKY_COUNTER: join(home, "counter"), ...extra });

/** Polls until `check` holds (a condition on files another process writes). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

const journalText = () => (existsSync(journal) ? readFileSync(journal, "utf8") : "");

describe("the classic bug: a failed turn never reads as the turn before it", () => {
  test(
    "turn 1 answers, turn 2 fails with 503 and says nothing: wait --print shows turn 2",
    async () => {
      const first = await turnguard(
        ["run", "--name", "w1", "--", "sh", "-c", "echo 'the answer before'"],
        { env: env() },
      );
      expect([first.code, first.stdout]).toEqual([0, "the answer before\n"]);
      const second = await turnguard(["run", "--name", "w1", "--", FAKE_AGY, "-p", "hi"], {
        env: env({ FAKE_AGY: "capacity" }),
      });
      expect([second.code, second.stdout]).toEqual([1, ""]);

      // Red: a naive reader takes the last reply there is, and gets the turn before.
      const ended = readJournal(journal).records.filter((r) => r.event === "turn_ended");
      const naive = ended.flatMap((r) => r.outcome.reply.text ? [r.outcome.reply.text] : []).at(-1);
      expect(naive).toBe("the answer before\n");

      // Green: wait reports turn 2's own error and no trace of the answer before.
      const expected =
        `w1  ready: turn failed\nerror: ${CAPACITY_CAUSE}\nno retry waits (retries are off)\n`;
      for (const target of [["w1"], []]) {
        const r = await turnguard(["wait", ...target, "--print"], { env: env() });
        expect(r.stdout).toBe(expected);
        expect(r.stdout).not.toContain("the answer before");
        expect([r.code, r.stderr]).toEqual([1, ""]);
      }
      const json = await turnguard(["wait", "w1", "--json"], { env: env() });
      expect(json.code).toBe(1);
      const row = JSON.parse(json.stdout);
      expect([row.name, row.status, row.error.message, row.error.category, row.reply]).toEqual([
        "w1",
        "failed",
        CAPACITY_CAUSE,
        "capacity",
        "",
      ]);
      expect(row.retry).toEqual({
        state: "settled",
        attempt: 0,
        of: 0,
        reason: "retries are off",
        nextAt: null,
        why: "off",
      });
      const plain = await turnguard(["wait", "w1"], { env: env() });
      expect([plain.code, plain.stdout]).toEqual([1, "w1  ready: turn failed\n"]);

      const log = await turnguard(["log"], { env: env() });
      const lines = log.stdout.trimEnd().split("\n").map((l) => l.split(/\s{2,}/).slice(1));
      expect(lines.map((l) => [l[0], l[2], l[3], l[4]])).toEqual([
        ["w1", "#1", "ok", "-"],
        ["w1", "#1", "failed", "capacity"],
      ]);
      expect(lines[1].at(-1)).toBe("retries off");
      const logJson = await turnguard(["log", "w1", "--json", "-n", "1"], { env: env() });
      const rows = logJson.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
      expect(rows.map((r) => [r.name, r.status, r.category, r.attempts, r.error])).toEqual([
        ["w1", "failed", "capacity", 1, CAPACITY_CAUSE],
      ]);
    },
    60_000,
  );

  test("a failed turn that streamed a partial reply prints that partial reply", async () => {
    const run = await turnguard(["run", "--name", "w1", "--retries", "2", "--", FLAKY], {
      env: env({ FLAKY_PLAN: "partial,ok" }),
    });
    expect([run.code, run.stdout]).toEqual([1, "partial answer"]);
    expect(readFileSync(join(home, "counter"), "utf8")).toBe("1\n");
    const r = await turnguard(["wait", "w1", "--print"], { env: env() });
    expect(r.stdout).toBe(
      "w1  ready: turn failed\n" +
        "error: UNAVAILABLE (code 503): The model is overloaded.\n" +
        "partial answer\n" +
        "no retry waits (output was already sent, so capacity is not retried)\n",
    );
    expect(r.code).toBe(1);
  }, 60_000);

  test("--outcome-json: the journal keeps the reply's first 64 KiB, and wait says so", async () => {
    // 200 000 bytes of stdout: the outcome on stdout carries it all, the journal 64 KiB.
    const script = "head -c 200000 /dev/zero | tr '\\0' x";
    const run = await turnguard([
      "run",
      "--name",
      "big",
      "--outcome-json",
      "--",
      "sh",
      "-c",
      script,
    ], {
      env: env(),
    });
    expect(run.code).toBe(0);
    const printed = JSON.parse(run.stdout.slice(run.stdout.lastIndexOf("\n{") + 1));
    expect(printed.reply.text.length).toBe(200_000);
    const line = readFileSync(journal, "utf8").split("\n").find((l) => l.includes("turn_ended"))!;
    expect(line.length).toBeLessThan(70_000);
    const rec = JSON.parse(line);
    expect([rec.outcome.reply.chars, rec.outcome.reply.text.length, rec.replyTruncated]).toEqual([
      200_000,
      65_536,
      true,
    ]);
    const r = await turnguard(["wait", "big", "--print"], { env: env() });
    expect([r.code, r.stdout, r.stderr]).toEqual([
      0,
      "x".repeat(65_536) + "\n",
      "turnguard: only the first 65536 bytes of the reply (200000 characters) were kept\n",
    ]);
  }, 60_000);

  test("an ok turn: --print prints its reply, exit 0", async () => {
    await turnguard(["run", "--name", "w2", "--", FLAKY], { env: env({ FLAKY_PLAN: "ok" }) });
    const r = await turnguard(["wait", "w2", "--print"], { env: env() });
    expect([r.code, r.stdout, r.stderr]).toEqual([0, "the answer\n", ""]);
  }, 60_000);
});

describe("waiting", () => {
  test("a turn whose retry is running is waited for, and its success reported", async () => {
    const run = turnguard(
      ["run", "--name", "w1", "--retries", "2", "--retry-max-wait", "5", "--", FLAKY],
      { env: env({ FLAKY_PLAN: "hint,slowok" }) },
    );
    await until(() => journalText().includes('"event":"retry_started"'), "the retry to start");
    const waited = await turnguard(["wait", "w1", "--print"], { env: env() });
    // The retry was running when wait began: wait saw its end, not the failure before it.
    expect(journalText()).toContain('"why":"succeeded"');
    expect([waited.code, waited.stdout, waited.stderr]).toEqual([0, "the answer\n", ""]);
    const r = await run;
    expect([r.code, r.stdout]).toEqual([0, "the answer\n"]);
  }, 60_000);

  test("a running turn times out with exit 3", async () => {
    new JournalWriter({ path: journal }).append(started(1));
    const r = await turnguard(["wait", "--timeout", "0.3"], { env: env() });
    expect(r.code).toBe(3);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      "turnguard: wait: timed out after 0.3s; w1 turn 1 (session s1) has not finished\n",
    );
  }, 60_000);

  test("wait wakes up when the turn ends", async () => {
    const w = new JournalWriter({ path: journal });
    w.append(started(1));
    const waiting = turnguard(["wait", "s1", "--print", "--timeout", "30"], { env: env() });
    await new Promise((r) => setTimeout(r, 400));
    w.append(ended(1, "ok", "done at last"));
    const r = await waiting;
    expect([r.code, r.stdout]).toEqual([0, "done at last\n"]);
  }, 60_000);

  test("a failed end without a retry decision is held at most 5 s, then reported", async () => {
    const w = new JournalWriter({ path: journal });
    w.append(started(1));
    w.append(ended(1, "failed", ""));
    const r = await turnguard(["wait", "--print"], { env: env() });
    expect(r.stdout).toBe(
      "w1  ready: turn failed\nerror: UNAVAILABLE (code 503)\nno retry waits (no retry decision was recorded)\n",
    );
    expect(r.code).toBe(1);
  }, 60_000);

  test("corrupt lines are skipped with a diagnostic, the turn is still reported", async () => {
    const w = new JournalWriter({ path: journal });
    w.append(started(1));
    appendFileSync(journal, "garbage\n");
    w.append(ended(1, "ok", "fine"));
    const r = await turnguard(["wait", "--print"], { env: env() });
    expect(r.stdout).toBe("fine\n");
    expect(r.stderr).toMatch(
      /^turnguard: journal .*journal\.jsonl:2: skipped a corrupt line: not JSON/,
    );
    expect(r.code).toBe(0);
  }, 60_000);

  test("exit codes: 4 no such session, 2 usage errors", async () => {
    const none = await turnguard(["wait", "ghost"], { env: env() });
    expect([none.code, none.stderr]).toEqual([
      4,
      `turnguard: wait: no such session or name "ghost" in the journal ${journal}\n`,
    ]);
    const empty = await turnguard(["wait"], { env: env() });
    expect(empty.code).toBe(4);
    const usage: string[][] = [
      ["wait", "a", "b"],
      ["wait", "--print", "--json"],
      ["wait", "--timeout", "soon"],
      ["wait", "--bogus"],
      ["log", "--limit", "0"],
      ["retry"],
    ];
    for (const args of usage) {
      const r = await turnguard(args, { env: env() });
      expect([args.join(" "), r.code]).toEqual([args.join(" "), 2]);
    }
    const noLog = await turnguard(["log", "ghost"], { env: env() });
    expect(noLog.code).toBe(4);
  }, 60_000);
});

describe("a reader racing the writer never sees a failed turn without its retry decision", () => {
  const WRITER = join(ROOT, "tests", "fixtures", "journal", "writer.ts");
  const TURNS = 400;

  /** Polls the journal as fast as it can while the writer runs; counts what it saw. */
  async function race(mode: "recorder" | "naive") {
    const reader = new JournalReader(journal);
    const state = emptyState();
    let done = false;
    const writer = runProcess([BUN, WRITER, mode, journal, "w", String(TURNS)]).then((r) => {
      done = true;
      return r;
    });
    const seen = { noRetry: 0, decidedBeforeEnd: 0, reads: 0 };
    const waits: Promise<{ code: number | null; stdout: string }>[] = [];
    while (!done) {
      foldRecords(reader.read().records, state);
      seen.reads++;
      const turn = latestTurn(state);
      if (turn) {
        const v = verdict(turn);
        if (v.kind === "pending") seen.noRetry++;
        if (v.kind === "running" && turn.retry?.state === "waiting") seen.decidedBeforeEnd++;
        if (mode === "recorder" && waits.length < 3 && seen.reads % 50 === 0) {
          waits.push(turnguard(["wait", "--json"], { env: env() }));
        }
      }
      await new Promise((r) => setImmediate(r));
    }
    const w = await writer;
    expect([w.code, w.stderr]).toEqual([0, ""]);
    return { seen, waits: await Promise.all(waits) };
  }

  test("decision first (the real recorder): never 'no retry'", async () => {
    const { seen, waits } = await race("recorder");
    expect(seen.noRetry).toBe(0);
    // The reader really landed between a decision and its end.
    expect(seen.decidedBeforeEnd).toBeGreaterThan(0);
    for (const w of waits) {
      expect(w.code).toBe(1);
      const row = JSON.parse(w.stdout);
      expect([row.status, row.retry.state, row.retry.reason]).toEqual([
        "failed",
        "waiting",
        "capacity",
      ]);
    }
  }, 60_000);

  test("end first (a naive writer) is caught by the same reader", async () => {
    const { seen } = await race("naive");
    expect(seen.noRetry).toBeGreaterThan(0);
  }, 60_000);
});

function started(turn: number): JournalRecord {
  return {
    ts: new Date().toISOString(),
    name: "w1",
    session: "s1",
    turn,
    pid: process.pid,
    event: "turn_started",
    mode: "run",
    agent: "fake",
    promptId: null,
  };
}

function ended(turn: number, status: Outcome["status"], text: string): JournalRecord {
  return {
    ts: new Date().toISOString(),
    name: "w1",
    session: "s1",
    turn,
    pid: process.pid,
    event: "turn_ended",
    attempt: 0,
    outcome: testOutcome(status, text, { turn }),
  };
}
