/**
 * Attacks on the live follower (lib/cause/attempt_follower.ts) by an agent that controls its
 * own log files: it renames its log away and keeps writing to it, deletes its logs in a
 * directory of tens of thousands of entries, swaps its log for a FIFO or a huge sparse file,
 * writes a line of megabytes without a newline, floods thousands of failed attempts. Real
 * files; each attack checks what the follower tells and what it costs (calls and bytes), not
 * how long it takes.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { profileAnchors, profileReaders } from "../../../lib/config/registry.ts";
import { AttemptFollower, MAX_TOLD_PER_LOOK, toldOf } from "../../../lib/cause/attempt_follower.ts";
import { takeSnapshot } from "../../../lib/cause/snapshot.ts";
import type { Profile } from "../../../lib/config/config.ts";
import type { AgentAttempt } from "../../../lib/core/outcome.ts";
import { type LogFs, nodeLogFs } from "../../../lib/io/logfs.ts";

const plugins = builtinPlugins();
const profile: Profile = {
  name: "opencode",
  match: ["opencode"],
  logs: [],
  logFormat: "plain",
  anchors: null,
};
const classifier = buildClassifier(profileAnchors(plugins.anchors, profile));
const readers = profileReaders(plugins.readers, profile);

// opencode's log line of a spent quota, as recorded (tests/agents/corpus/opencode/quota_daily.jsonl).
const QUOTA_LINE =
  'timestamp=2026-12-01T16:19:43.330Z level=ERROR run=3ed90e15 message="stream error" providerID=mock modelID=gpt-5 session.id=ses_dcd9 small=false agent=build mode=primary error.error="AI_APICallError: You exceeded your current quota, please check your plan and billing details."';

/** An error line the pack's anchors all try before one matches (the slowest to classify). */
const SLOW_LINE =
  'level=ERROR message="stream error" error.error="AI_APICallError: something failed ' +
  `with status 5" ${"ab ".repeat(20)}\n`;

/** The scratch directories of a test, removed after it. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A fresh scratch directory (removed after the test). */
function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tg-hostile-follow-"));
  dirs.push(dir);
  return dir;
}

/** A scratch directory with the agent's log in it, `started` (or what `first` says). */
function startedLog(first = "started\n"): { dir: string; log: string } {
  const dir = scratchDir();
  const log = join(dir, "agent.log");
  writeFileSync(log, first);
  return { dir, log };
}

/** A LogFs that counts the calls a look makes. */
function counting(): { fs: LogFs; calls: { readDir: number; stat: number; bytes: number } } {
  const calls = { readDir: 0, stat: 0, bytes: 0 };
  const fs: LogFs = {
    readDir: (p) => (calls.readDir++, nodeLogFs.readDir(p)),
    stat: (p) => (calls.stat++, nodeLogFs.stat(p)),
    statAsync: (p) => (calls.stat++, nodeLogFs.statAsync(p)),
    read: async (p, range, budget) => {
      const r = await nodeLogFs.read(p, range, budget);
      if (r.ok) calls.bytes += r.bytes.length;
      return r;
    },
  };
  return { fs, calls };
}

function follower(
  patterns: string[],
  seen: AgentAttempt[],
  fs: LogFs = nodeLogFs,
  told: string[] = [],
): AttemptFollower {
  return new AttemptFollower({
    logs: takeSnapshot(patterns, Date.now()),
    logFormat: "plain",
    records: null,
    startedAt: Date.now(),
    classifier,
    readers,
    pid: () => null,
    onAttempt: (a) => seen.push(a),
    onDiagnostic: (d) => told.push(d),
    fs,
  });
}

describe("the live follower, attacked by the agent's own log files", () => {
  test("a log renamed away (to a name its pattern does not match) and still written: each attempt is told once", async () => {
    const { dir, log } = startedLog();
    const seen: AgentAttempt[] = [];
    const f = follower([log], seen);
    renameSync(log, join(dir, "agent.log.1"));
    appendFileSync(join(dir, "agent.log.1"), `${QUOTA_LINE}\n`);
    await f.look();
    expect(seen.map((a) => a.n)).toEqual([1]);
    for (let i = 0; i < 3; i++) await f.look();
    expect(seen.map((a) => a.n)).toEqual([1]); // not told again on every look
    appendFileSync(join(dir, "agent.log.1"), `${QUOTA_LINE}\n`);
    await f.look();
    await f.look();
    expect(seen.map((a) => a.n)).toEqual([1, 2]);
  });

  test("logs deleted in a directory of 20,000 entries are searched for once, not on every look", async () => {
    const dir = scratchDir();
    for (let i = 0; i < 20_000; i++) closeSync(openSync(join(dir, `x${i}`), "w"));
    for (let i = 0; i < 8; i++) writeFileSync(join(dir, `a${i}.log`), "started\n");
    const seen: AgentAttempt[] = [];
    const { fs, calls } = counting();
    const f = follower([join(dir, "*.log")], seen, fs);
    for (let i = 0; i < 8; i++) unlinkSync(join(dir, `a${i}.log`));
    await f.look();
    const first = calls.stat;
    for (let i = 0; i < 5; i++) await f.look();
    // Each later look costs what a look over an empty glob costs, not 8 × 20,000 stats.
    expect(calls.stat - first).toBeLessThan(100);
  });

  test("a log swapped for a FIFO mid-turn: the look returns and tells nothing", async () => {
    const { log } = startedLog();
    const seen: AgentAttempt[] = [];
    const f = follower([log], seen);
    unlinkSync(log);
    execFileSync("mkfifo", [log]);
    await f.look();
    await f.look();
    expect(seen).toEqual([]);
  });

  test("a log swapped for a sparse file of a terabyte: each look reads a bounded tail", async () => {
    const { log } = startedLog();
    const seen: AgentAttempt[] = [];
    const { fs, calls } = counting();
    const f = follower([log], seen, fs);
    unlinkSync(log);
    writeFileSync(log, "");
    truncateSync(log, 1024 ** 4);
    for (let i = 0; i < 3; i++) await f.look();
    expect(seen).toEqual([]);
    expect(calls.bytes).toBeLessThanOrEqual(3 * 1024 * 1024);
  });

  test("a line of 8 MiB without a newline, then an attempt: the attempt is told once, the long line never", async () => {
    const { log } = startedLog();
    const seen: AgentAttempt[] = [];
    const { fs, calls } = counting();
    const f = follower([log], seen, fs);
    const long = `quota exceeded ${"x".repeat(8 * 1024 * 1024)}`;
    appendFileSync(log, long);
    await f.look();
    await f.look();
    expect(seen).toEqual([]);
    appendFileSync(log, `\n${QUOTA_LINE}\n`);
    await f.look();
    await f.look();
    expect(seen.map((a) => [a.n, a.category])).toEqual([[1, "quota"]]);
    expect(calls.bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
  });

  test("a flood of 5,000 failed attempts in one look: n counts them all, few are told", async () => {
    const { log } = startedLog();
    const seen: AgentAttempt[] = [];
    const f = follower([log], seen);
    appendFileSync(log, `${QUOTA_LINE}\n`.repeat(5_000).slice(0, 240 * 1024));
    await f.look();
    const last = seen.at(-1)!;
    expect(last.n).toBeGreaterThan(500);
    expect(f.seen).toBe(last.n);
    // Each told attempt is a journal record and a --verbose line: a look tells a bounded few.
    expect(seen.length).toBeLessThanOrEqual(20);
    expect(seen[0].n).toBe(1);
  });

  test("a flood keeps the newest attempt not retryable: --fail-fast still sees a quota among rate limits", () => {
    const at = (n: number, retryable: boolean): AgentAttempt => ({
      n,
      at: "2026-12-01T16:20:00.000Z",
      cause: retryable ? "rate limited" : "quota exceeded",
      category: retryable ? "rate_limit" : "quota",
      retryable,
      source: { kind: "log", path: "agent.log" },
    });
    const found = Array.from({ length: 1000 }, (_, i) => at(i + 1, i !== 700));
    const told = toldOf(found);
    expect(told.length).toBe(MAX_TOLD_PER_LOOK);
    expect(told.map((a) => a.n).slice(-2)).toEqual([701, 1000]);
    expect(told[0].n).toBe(1);
  });

  test("a look over 1 MiB of failed attempts lets the event loop turn (the relay runs on it)", async () => {
    const dir = scratchDir();
    for (let i = 0; i < 4; i++) writeFileSync(join(dir, `a${i}.log`), "");
    const seen: AgentAttempt[] = [];
    const f = follower([join(dir, "*.log")], seen);
    for (let i = 0; i < 4; i++) {
      appendFileSync(join(dir, `a${i}.log`), SLOW_LINE.repeat(2000).slice(0, 250 * 1024));
    }
    let last = performance.now();
    let longest = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 5);
    await f.look();
    // One more tick measures the stretch that ended with the look.
    await new Promise((r) => setTimeout(r, 20));
    clearInterval(timer);
    expect(f.seen).toBeGreaterThan(0);
    // A smoke bound: classified in one piece, this look held the thread for 700–850 ms.
    expect(longest).toBeLessThan(200);
  });

  test("glog lines of other processes stay theirs when a look is classified in slices", async () => {
    const { log } = startedLog("");
    const glog = (pid: number, text: string) =>
      `E1201 16:20:00.000000 ${pid} errorreport.go:223] ${text}\n`;
    const seen: AgentAttempt[] = [];
    const f = new AttemptFollower({
      logs: takeSnapshot([log], Date.now()),
      logFormat: "glog",
      records: null,
      startedAt: Date.now(),
      classifier,
      readers,
      pid: () => 4242,
      onAttempt: (a) => seen.push(a),
    });
    // One line of this agent's, then a hundred of another process's errors (more than a slice).
    appendFileSync(
      log,
      glog(4242, "starting") + glog(777, QUOTA_LINE).repeat(100),
    );
    await f.look();
    expect(seen).toEqual([]);
    // This agent's own line of the same words is its attempt.
    appendFileSync(log, glog(4242, QUOTA_LINE));
    await f.look();
    expect(seen.map((a) => a.category)).toEqual(["quota"]);
  });
});
