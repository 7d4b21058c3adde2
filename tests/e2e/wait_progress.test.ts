/**
 * `turnguard wait` (the compiled binary) shows a running turn's agent retrying while it
 * follows the journal: each `agent_attempt` record another process appends is told on stderr
 * as it arrives, stdout keeps its one report, and `--json` carries the attempts. `log` shows
 * the running turn's progress in its last column. End to end: `turnguard proxy` follows a
 * fake agent that retries on its own, journals each attempt, and `wait` tells them.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatRecord, type JournalRecord } from "../../lib/journal/records.ts";
import { ensureBinary } from "../helpers/binary.ts";
import { homeEnv, runProcess } from "../helpers/cli.ts";
import { readTranscript } from "../../lib/record/transcript.ts";
import { CORPUS } from "../agents/replay.ts";
import {
  fakeArgs,
  killedAfterEach,
  openSession,
  prompt,
  readOutcomes,
  rejection,
  scratch,
  startProxy,
  testEnv,
  withClient,
} from "../fixtures/acp/harness.ts";
import { testOutcome } from "../helpers/outcome.ts";

let binary: string;
let home: string;
let journal: string;
const children: ChildProcess[] = [];
beforeAll(() => {
  binary = ensureBinary();
});
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tg-wait-progress-"));
  mkdirSync(join(home, "state"));
  journal = join(home, "state", "journal.jsonl");
});
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  rmSync(home, { recursive: true, force: true });
});

// The owner is this test process: alive while `wait` checks on it.
const common = () => ({
  ts: new Date().toISOString(),
  name: "coder",
  session: "s1",
  turn: 1,
  pid: process.pid,
});
const started = (): JournalRecord => ({
  ...common(),
  event: "turn_started",
  mode: "proxy",
  agent: "qwen-code",
  promptId: 3,
});
const attempt = (n: number): JournalRecord => ({
  ...common(),
  event: "agent_attempt",
  n,
  at: new Date().toISOString(),
  cause: "429 You exceeded your current quota, please check your plan and billing details.",
  category: "quota",
  code: 429,
  retryable: false,
  nextInMs: 60_000,
  source: { kind: "records", path: join(home, ".qwen", "chats", "s1.jsonl") },
});
const ended = (): JournalRecord => ({
  ...common(),
  event: "turn_ended",
  attempt: 0,
  outcome: testOutcome("cancelled", ""),
});
const append = (r: JournalRecord) => appendFileSync(journal, formatRecord(r));

/** Starts `turnguard wait ARGS`; its stderr lines as they come, and its end. */
function startWait(args: string[]) {
  const child = spawn(binary, ["wait", ...args, "--journal", journal], {
    env: { ...process.env, ...homeEnv(home) } as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c) => (stdout += c));
  child.stderr!.on("data", (c) => (stderr += c));
  const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
  /** Resolves once stderr holds `n` lines (a generous smoke bound, not a timing claim). */
  const stderrLines = async (n: number) => {
    for (let i = 0; i < 600 && stderr.split("\n").length - 1 < n; i++) await Bun.sleep(50);
    return stderr.split("\n").filter((l) => l !== "");
  };
  return { exited, stderrLines, out: () => stdout, err: () => stderr };
}

const PROGRESS =
  /^turnguard: coder turn 1: retrying: quota, attempt (\d+), next in (59|60|1m)s? \(the agent's own retry; quota is not retryable\)$/;

describe("wait follows a retrying turn", () => {
  test("each attempt appended while it waits is told on stderr; stdout is the report", async () => {
    append(started());
    const wait = startWait(["coder"]);
    // An attempt recorded after `wait` started reading, then another.
    await Bun.sleep(300);
    append(attempt(1));
    const first = await wait.stderrLines(1);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatch(PROGRESS);
    append(attempt(2));
    const second = await wait.stderrLines(2);
    expect(second.map((l) => l.match(PROGRESS)?.[1])).toEqual(["1", "2"]);
    append(ended());
    expect(await wait.exited).toBe(0);
    expect(wait.out()).toBe("coder  ready: turn cancelled\n");
    expect(wait.err().split("\n").filter((l) => l !== "")).toHaveLength(2);
  });

  test("attempts already in the journal: the latest is told once at the start", async () => {
    append(started());
    append(attempt(1));
    append(attempt(2));
    append(attempt(3));
    const wait = startWait(["coder", "--json"]);
    const lines = await wait.stderrLines(1);
    expect(lines.map((l) => l.match(PROGRESS)?.[1])).toEqual(["3"]);
    append(ended());
    expect(await wait.exited).toBe(0);
    const row = JSON.parse(wait.out());
    expect(row.status).toBe("cancelled");
    expect(row.agentAttempts.count).toBe(3);
    expect(row.agentAttempts.recent.map((a: { n: number }) => a.n)).toEqual([1, 2, 3]);
    expect(row.agentAttempts.recent[2]).toMatchObject({ category: "quota", retryable: false });
    expect(wait.err().split("\n").filter((l) => l !== "")).toHaveLength(1);
  });

  test("a timeout says what the agent was doing", async () => {
    append(started());
    append(attempt(14));
    const wait = startWait(["coder", "--timeout", "1"]);
    expect(await wait.exited).toBe(3);
    const lines = wait.err().split("\n").filter((l) => l !== "");
    expect(lines[0]).toMatch(PROGRESS);
    expect(lines[1]).toMatch(
      /^turnguard: wait: timed out after 1s; coder turn 1 \(session s1\) has not finished; retrying: quota, attempt 14, next in \d+s \(the agent's own retry; quota is not retryable\)$/,
    );
  });
});

describe("log", () => {
  test("a running turn's progress in its last column; --json carries the attempts", async () => {
    append(started());
    append(attempt(1));
    append(attempt(2));
    const text = await runProcess([binary, "log", "--journal", journal], { env: homeEnv(home) });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      / {2}coder {2}s1 {2}#1 {2}running {2}- {2}- {2}retrying: quota, attempt 2, next in (59|60|1m)s? \(the agent's own retry; quota is not retryable\)\n$/,
    );
    const json = await runProcess([binary, "log", "--json", "--journal", journal], {
      env: homeEnv(home),
    });
    const row = JSON.parse(json.stdout);
    expect([row.status, row.agentAttempts.count, row.agentAttempts.recent.length]).toEqual([
      "running",
      2,
      2,
    ]);
    expect(Date.parse(row.agentAttempts.nextAt) - Date.parse(row.agentAttempts.recent[1].at))
      .toBe(60_000);
  });
});

describe("end to end: a real proxy's journal", () => {
  const track = killedAfterEach();

  test("wait shows each attempt a retrying agent makes behind turnguard proxy", async () => {
    const s = scratch();
    const journalPath = join(s.dir, "journal.jsonl");
    // The fake agent retries an overloaded model silently, one log line per attempt every
    // 300 ms, 20 times, then fails the prompt; the proxy follows its log.
    const p = track(
      startProxy(
        s,
        fakeArgs(s, ["--journal", journalPath, "--name", "coder"]),
        undefined,
        {},
        [binary],
      ),
    );
    const wait = spawn(binary, ["wait", "coder", "--timeout", "60", "--journal", journalPath], {
      env: testEnv(s) as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(wait);
    let out = "";
    let err = "";
    wait.stdout!.on("data", (c) => (out += c));
    wait.stderr!.on("data", (c) => (err += c));
    const waited = new Promise<number | null>((done) => wait.on("close", (code) => done(code)));
    const failure = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await rejection(prompt(ctx, sessionId, "retrying 503 20"));
    });
    expect(failure.message).toContain("overloaded");
    expect(await waited).toBe(1);
    await p.exited;
    expect(out).toBe("coder  ready: turn failed\n");
    // Told while the turn ran, one line per read that brought attempts, the latest each time.
    const lines = err.split("\n").filter((l) => l !== "");
    const told = lines.map((l) =>
      l.match(
        /^turnguard: coder turn 1: retrying: capacity, attempt (\d+)(, next (in|was due) \S+( ago)?)? \(the agent's own retry\)$/,
      )
    );
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(told.every((m) => m !== null)).toBe(true);
    const numbers = told.map((m) => Number(m![1]));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(numbers.at(-1)!).toBeLessThanOrEqual(20);
    // The journal holds every attempt the proxy observed; the Outcome carries them.
    const records = readFileSync(journalPath, "utf8").split("\n").filter((l) => l !== "")
      .map((l) => JSON.parse(l));
    const attempts = records.filter((r) => r.event === "agent_attempt");
    expect(attempts.length).toBeGreaterThanOrEqual(numbers.at(-1)!);
    const [o] = readOutcomes(s.outcomes);
    expect(o.agentAttempts?.length).toBe(attempts.length);
  });
});

describe("end to end: a recorded agent retrying a spent quota", () => {
  const track = killedAfterEach();

  test("qwen-code's recorded quota turn: wait shows its retries while the turn runs", async () => {
    // The corpus's qwen-code quota_daily: the mock answered every request 429
    // insufficient_quota; qwen-code retried silently, one api_error record of its chat file per
    // attempt (five), until the recording client cancelled after 60 s. Its agent side is
    // played behind the compiled proxy (the chat records land during the turn), the client
    // lines are the recorded ones, and the recorded cancel is sent once wait has told.
    const path = join(CORPUS, "qwen-code", "quota_daily.jsonl");
    const clientLines = readTranscript(path).events.filter((e) => e.dir === "c2a")
      .map((e) => e.line);
    const cancel = clientLines.findIndex((l) => l.includes('"session/cancel"'));
    expect(cancel).toBe(clientLines.length - 1);
    const s = scratch();
    const journalPath = join(s.dir, "journal.jsonl");
    const p = track(startProxy(
      s,
      ["--agent", "qwen", "--journal", journalPath, "--name", "qwen", "--outcome-file", s.outcomes],
      [binary, "replay", "--agent-side", path],
      { TURNGUARD_REPLAY_HOME: s.home, QWEN_HOME: join(s.home, ".qwen") },
      [binary],
    ));
    let out = "";
    p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
    const answered = async (id: number) => {
      for (let i = 0; i < 600; i++) {
        if (out.split("\n").some((l) => l.startsWith(`{"jsonrpc":"2.0","id":${id},`))) return;
        await Bun.sleep(50);
      }
      throw new Error(`no answer to ${id}: ${out}\n${p.stderr()}`);
    };
    for (const [i, line] of clientLines.slice(0, cancel - 1).entries()) {
      p.child.stdin!.write(line + "\n");
      await answered(i);
    }
    const wait = spawn(binary, ["wait", "qwen", "--timeout", "60", "--journal", journalPath], {
      env: testEnv(s) as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(wait);
    let waitOut = "";
    let waitErr = "";
    wait.stdout!.on("data", (c) => (waitOut += c));
    wait.stderr!.on("data", (c) => (waitErr += c));
    const waited = new Promise<number | null>((done) => wait.on("close", (code) => done(code)));
    // The prompt: qwen-code's attempts are played, then it waits for the client. Its records
    // announce no wait: the lines say none.
    p.child.stdin!.write(clientLines[cancel - 1] + "\n");
    const PROGRESS =
      /^turnguard: qwen turn 1: retrying: quota, attempt (\d) \(the agent's own retry; quota is not retryable\)$/;
    const told = () => waitErr.split("\n").filter((l) => PROGRESS.test(l));
    for (let i = 0; i < 600 && told().length === 0; i++) await Bun.sleep(50);
    const lines = told();
    expect(lines.length).toBeGreaterThanOrEqual(1);
    const numbers = lines.map((l) => Number(l.match(PROGRESS)![1]));
    expect(numbers.every((n) => n >= 1 && n <= 5)).toBe(true);
    // The turn still runs: wait has not reported.
    expect(waitOut).toBe("");
    p.child.stdin!.write(clientLines[cancel] + "\n");
    expect(await waited).toBe(0);
    expect(waitOut).toBe("qwen  ready: turn cancelled\n");
    p.child.stdin!.end();
    await p.exited;
    const [o] = readOutcomes(s.outcomes);
    expect(o.status).toBe("cancelled");
    expect(o.agentAttempts?.map((a) => [a.n, a.category, a.source.kind])).toEqual(
      [1, 2, 3, 4, 5].map((n) => [n, "quota", "records"]),
    );
  });
});
