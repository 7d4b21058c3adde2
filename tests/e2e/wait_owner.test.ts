/**
 * `wait` never waits for ever on a turn whose process is gone, and waits (with --timeout)
 * for a session that has not appeared yet.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatRecord, type JournalRecord, turnKey } from "../../lib/journal/records.ts";
import { PENDING_HOLD_MS, waitForTurn } from "../../lib/cli/wait.ts";
import { JournalWriter } from "../../lib/journal/writer.ts";
import type { Outcome } from "../../lib/core/outcome.ts";
import {
  ownerState,
  parseProcStat,
  pidSpace,
  type ProcessProbe,
  processStart,
} from "../../lib/journal/process_identity.ts";
import { logRow, printReport, stateLine, waitRow } from "../../lib/journal/report.ts";
import { foldRecords, latestTurn, verdict, withOwner } from "../../lib/journal/fold.ts";
import { runProcess, turnguard } from "../helpers/cli.ts";
import { capacityError, testOutcome } from "../helpers/outcome.ts";

let home: string;
let journal: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tg-wait-owner-"));
  journal = join(home, "state", "journal.jsonl");
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const env = () => ({
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  TURNGUARD_CONFIG: undefined,
  TURNGUARD_JOURNAL: journal,
});

const common = (pid: number, pidStart?: string) => ({
  ts: new Date().toISOString(),
  name: "w1",
  session: "s1",
  turn: 1,
  pid,
  ...(pidStart === undefined ? {} : { pidStart }),
});
const started = (pid: number, pidStart?: string): JournalRecord => ({
  ...common(pid, pidStart),
  event: "turn_started",
  mode: "run",
  agent: "fake",
  promptId: null,
});
const outcome = (status: Outcome["status"], text: string): Outcome =>
  testOutcome(status, text, { error: status === "failed" ? capacityError("overloaded") : null });
const ended = (pid: number, status: Outcome["status"], text = ""): JournalRecord => ({
  ...common(pid),
  event: "turn_ended",
  attempt: 0,
  outcome: outcome(status, text),
});

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  let pid = 0;
  await runProcess(["true"], { onSpawn: (c) => (pid = c.pid!) });
  return pid;
}

/** A live process that is not turnguard (a stranger that may reuse an owner's pid). */
function stranger() {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  const exited = new Promise<string | null>((r) => child.on("exit", (_c, sig) => r(sig)));
  return { pid: child.pid!, exited, kill: () => child.kill("SIGKILL") };
}

const GONE_PRINT = (pid: number) =>
  "w1  ready: turn failed (its process is gone)\n" +
  `error: its process (pid ${pid}) is gone\n` +
  "no retry waits (its process is gone)\n";

describe("process identity", () => {
  const STAT = "4242 (tg (x) y) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 " +
    "987654 1000 10 18446744073709551615\n";
  test("/proc/PID/stat: state and start time, a command name with spaces and parens", () => {
    expect(parseProcStat(STAT)).toEqual({ state: "S", start: "987654" });
    expect(parseProcStat("garbage")).toBe(null);
    expect(parseProcStat("1 (x) R 1 2")).toBe(null);
  });

  test("this process: its start time reads the same twice", () => {
    const mine = processStart(process.pid);
    expect(mine).toMatch(/^\d+$/);
    expect(processStart(process.pid)).toBe(mine);
  });

  const HERE = "boot-1/pid:[4026531836]";
  // [exists, stat text, recorded start, recorded space, state]
  const rows: Array<
    [boolean, string | null, string | undefined, string | undefined, ReturnType<typeof ownerState>]
  > = [
    [false, null, "987654", HERE, "gone"],
    [true, STAT, "987654", HERE, "alive"],
    [true, STAT, "111", HERE, "gone"], // the pid now names another process
    [true, STAT.replace(") S ", ") Z "), "987654", HERE, "gone"], // a zombie
    [true, STAT, undefined, undefined, "unverified"], // no identity recorded
    [true, null, "987654", undefined, "unverified"], // no /proc here
    [false, null, "987654", "boot-2/pid:[4026531836]", "elsewhere"], // another host
    [true, STAT, "111", "boot-1/pid:[4026532000]", "elsewhere"], // another container
  ];
  for (const [exists, stat, pidStart, pidSpace, want] of rows) {
    test(`exists=${exists} stat=${stat !== null} start=${pidStart} space=${pidSpace} -> ${want}`, () => {
      const probe: ProcessProbe = { exists: () => exists, stat: () => stat, space: () => HERE };
      expect(ownerState({ pid: 4242, pidStart, pidSpace }, probe)).toBe(want);
    });
  }

  test("this process's pid space: boot id and pid namespace", () => {
    expect(pidSpace()).toMatch(/^[0-9a-f-]{36}\/pid:\[\d+\]$/);
  });
});

describe("the fold with the owner's liveness passed in", () => {
  const turnOf = (records: JournalRecord[], alive: boolean) =>
    withOwner(latestTurn(foldRecords(records))!, alive);
  // [name, records, owner alive, verdict]
  const rows: Array<[string, JournalRecord[], boolean, string]> = [
    ["running, owner alive", [started(7)], true, "running"],
    ["running, owner gone", [started(7)], false, "done failed"],
    [
      "failed end without a decision, owner gone",
      [started(7), ended(7, "failed")],
      false,
      "done failed",
    ],
    ["ended ok, owner gone since", [started(7), ended(7, "ok", "hi")], false, "done ok"],
  ];
  for (const [name, records, alive, want] of rows) {
    test(name, () => {
      const v = verdict(turnOf(records, alive));
      expect(v.kind === "done" ? `done ${v.failed ? "failed" : "ok"}` : v.kind).toBe(want);
    });
  }

  test("an unfinished turn whose process is gone reads as failed", () => {
    const turn = turnOf([started(7)], false);
    expect(stateLine(turn)).toBe("w1  ready: turn failed (its process is gone)");
    expect(printReport(turn, "w1", Date.now())).toBe(GONE_PRINT(7));
    const gone = {
      code: null,
      message: "its process (pid 7) is gone",
      category: "crash" as const,
      anchor: null,
      source: null,
    };
    expect(waitRow(turn)).toEqual({
      name: "w1",
      session: "s1",
      turn: 1,
      status: "failed",
      error: gone,
      retry: {
        state: "unknown",
        attempt: null,
        of: null,
        reason: "its process is gone",
        nextAt: null,
        why: null,
      },
      reply: "",
      agentAttempts: null,
    });
    expect([logRow(turn).status, logRow(turn).category, logRow(turn).error]).toEqual([
      "failed",
      "crash",
      "its process (pid 7) is gone",
    ]);
  });
});

describe("turnguard wait and a gone owner", () => {
  test("a turn whose process died is reported failed, exit 1 (not waited on)", async () => {
    const pid = await deadPid();
    new JournalWriter({ path: journal }).append(started(pid));
    const r = await turnguard(["wait", "w1", "--print", "--timeout", "20"], { env: env() });
    expect([r.code, r.stdout, r.stderr]).toEqual([1, GONE_PRINT(pid), ""]);
    const plain = await turnguard(["wait", "--timeout", "20"], { env: env() });
    expect([plain.code, plain.stdout]).toEqual([
      1,
      "w1  ready: turn failed (its process is gone)\n",
    ]);
  }, 60_000);

  test("a pid reused by another process is not taken for the owner", async () => {
    const other = stranger();
    try {
      new JournalWriter({ path: journal }).append(started(other.pid, "1"));
      const r = await turnguard(["wait", "w1", "--json", "--timeout", "20"], { env: env() });
      expect(r.code).toBe(1);
      const row = JSON.parse(r.stdout);
      expect([row.status, row.error.message]).toEqual([
        "failed",
        `its process (pid ${other.pid}) is gone`,
      ]);
    } finally {
      other.kill();
    }
  }, 60_000);

  test("an owner on another host (or container) is not looked up: waited for", async () => {
    const pid = await deadPid();
    new JournalWriter({ path: journal }).append({
      ...started(pid),
      pidSpace: "another-boot/pid:[1]",
    });
    const r = await turnguard(["wait", "w1", "--timeout", "0.5"], { env: env() });
    expect(r.code).toBe(3);
  }, 60_000);

  test("a live owner with its start time recorded is waited for", async () => {
    const other = stranger();
    try {
      new JournalWriter({ path: journal }).append(started(other.pid, processStart(other.pid)));
      const r = await turnguard(["wait", "w1", "--timeout", "0.5"], { env: env() });
      expect(r.code).toBe(3);
    } finally {
      other.kill();
    }
  }, 60_000);

  test("turnguard run killed mid-turn: wait reports it gone", async () => {
    const agentPid = join(home, "agent.pid");
    let runPid = 0;
    const run = turnguard(
      ["run", "--name", "w1", "--", "sh", "-c", `echo $$ > ${agentPid}; exec sleep 30`],
      { env: env(), onSpawn: (c) => (runPid = c.pid!) },
    );
    for (let i = 0; i < 600 && !existsSync(agentPid); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const sleeper = Number(readFileSync(agentPid, "utf8"));
    process.kill(runPid, "SIGKILL");
    await run;
    try {
      const r = await turnguard(["wait", "w1", "--print", "--timeout", "20"], { env: env() });
      expect([r.code, r.stdout]).toEqual([1, GONE_PRINT(runPid)]);
    } finally {
      process.kill(sleeper, "SIGKILL");
    }
  }, 60_000);
});

describe("wait --timeout waits for the session to appear", () => {
  test("a session written after wait began is waited for and reported", async () => {
    const waiting = turnguard(["wait", "w1", "--print", "--timeout", "30"], { env: env() });
    await new Promise((r) => setTimeout(r, 500));
    const w = new JournalWriter({ path: journal });
    w.append(started(process.pid));
    w.append(ended(process.pid, "ok", "late answer"));
    const r = await waiting;
    expect([r.code, r.stdout, r.stderr]).toEqual([0, "late answer\n", ""]);
  }, 60_000);

  test(
    "no such session within the timeout: exit 3; without --timeout: exit 4 at once",
    async () => {
      const r = await turnguard(["wait", "ghost", "--timeout", "0.3"], { env: env() });
      expect([r.code, r.stdout, r.stderr]).toEqual([
        3,
        "",
        `turnguard: wait: timed out after 0.3s; no session or name "ghost" appeared in the journal ${journal}\n`,
      ]);
      const any = await turnguard(["wait", "--timeout", "0.3"], { env: env() });
      expect([any.code, any.stderr]).toEqual([
        3,
        `turnguard: wait: timed out after 0.3s; no session appeared in the journal ${journal}\n`,
      ]);
      const none = await turnguard(["wait", "ghost"], { env: env() });
      expect(none.code).toBe(4);
    },
    60_000,
  );
});

describe("a record cut short, a retry whose process is gone", () => {
  const INCOMPLETE = (pid: number) =>
    "w1  ready: turn incomplete (its process is gone, its record was cut short)\n" +
    `error: its process (pid ${pid}) is gone and a journal record of the turn is incomplete ` +
    "(cut short, e.g. by a full disk): how the turn ended is unknown\n";

  test("a torn turn_ended at the journal's end: incomplete, exit 5 (not failed)", async () => {
    const pid = await deadPid();
    const w = new JournalWriter({ path: journal });
    w.append(started(pid));
    // The disk filled while the end was written: its line stops short, without a newline.
    const end = formatRecord(ended(pid, "ok", "the answer"));
    appendFileSync(journal, end.slice(0, end.length - 40));
    const r = await turnguard(["wait", "w1", "--print", "--timeout", "20"], { env: env() });
    expect([r.code, r.stdout]).toEqual([5, INCOMPLETE(pid)]);
    const json = await turnguard(["wait", "w1", "--json", "--timeout", "20"], { env: env() });
    expect(json.code).toBe(5);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: "incomplete", reply: "" });
  }, 60_000);

  test("a torn turn_ended with a record glued behind it: incomplete", async () => {
    const pid = await deadPid();
    const w = new JournalWriter({ path: journal });
    w.append(started(pid));
    const end = formatRecord(ended(pid, "ok", "the answer"));
    appendFileSync(journal, end.slice(0, 200));
    w.append({ ...started(pid), session: "other", name: "w2" });
    const r = await turnguard(["wait", "w1", "--print", "--timeout", "20"], { env: env() });
    expect([r.code, r.stdout]).toEqual([5, INCOMPLETE(pid)]);
    expect(r.stderr).toContain("skipped a torn record");
  }, 60_000);

  test("a waiting retry whose process is gone is not announced", async () => {
    const pid = await deadPid();
    const w = new JournalWriter({ path: journal });
    w.append(started(pid));
    w.append({
      ...common(pid),
      event: "retry_scheduled",
      attempt: 1,
      of: 2,
      afterMs: 100_000,
      nextAt: new Date(Date.now() + 100_000).toISOString(),
      reason: "capacity",
    });
    w.append(ended(pid, "failed"));
    const r = await turnguard(["wait", "w1", "--print"], { env: env() });
    expect([r.code, r.stdout]).toEqual([
      1,
      "w1  ready: turn failed\nerror: overloaded\n" +
      `no retry waits (its process (pid ${pid}) is gone; retry 1 of 2 will not run)\n`,
    ]);
    const json = await turnguard(["wait", "w1", "--json"], { env: env() });
    expect(JSON.parse(json.stdout).retry).toMatchObject({ state: "unknown", attempt: 1, of: 2 });
    const log = await turnguard(["log", "w1"], { env: env() });
    expect(log.stdout).toContain("failed");
  }, 60_000);
});

describe("a failed end without its decision is held per turn, not per turn number", () => {
  test("a later writer's turn 1 of the same session is held its own 5 s", async () => {
    let now = 0;
    const pending: JournalRecord[][] = [
      [{ ...started(process.pid), writer: "a" }, { ...ended(process.pid, "failed"), writer: "a" }],
    ];
    // At 4 s a later process serves the same session and numbers its turn 1 again.
    const later = [
      { ...started(process.pid), writer: "b" },
      { ...ended(process.pid, "failed"), writer: "b" },
    ];
    const result = await waitForTurn("w1", 60_000, {
      read: () => ({ records: pending.shift() ?? [], torn: [], diagnostics: [], reset: false }),
      changes: {
        next: (ms) => {
          if (now < 4000 && now + ms >= 4000) pending.push(later);
          now += ms;
          return Promise.resolve();
        },
        close: () => {},
      },
      now: () => now,
      diagnostic: () => {},
      held: () => [],
      ownerAlive: () => true,
      progress: () => {},
    });
    expect(result.kind).toBe("done");
    if (result.kind !== "done") return;
    expect(result.turn.key).toBe(turnKey({ session: "s1", turn: 1, writer: "b" }));
    // Held from when it was first seen (4 s), not from when writer a's turn 1 was.
    expect(now).toBeGreaterThanOrEqual(4000 + PENDING_HOLD_MS);
  });
});
