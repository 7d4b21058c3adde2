import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { profileAnchors, profileReaders } from "../../../lib/config/registry.ts";
import {
  attemptsIn,
  attemptsNote,
  attemptsSummary,
  keepAttempt,
  MAX_ATTEMPTS_KEPT,
} from "../../../lib/cause/agent_attempts.ts";
import { AttemptFollower, type Ticker } from "../../../lib/cause/attempt_follower.ts";
import { takeSnapshot } from "../../../lib/cause/snapshot.ts";
import type { Profile } from "../../../lib/config/config.ts";
import type { AgentAttempt } from "../../../lib/core/outcome.ts";

const plugins = builtinPlugins();
function profileOf(
  name: string,
): { classifier: ReturnType<typeof buildClassifier>; readers: ReturnType<typeof profileReaders> } {
  const profile: Profile = { name, match: [name], logs: [], logFormat: "plain", anchors: null };
  return {
    classifier: buildClassifier(profileAnchors(plugins.anchors, profile)),
    readers: profileReaders(plugins.readers, profile),
  };
}
const NOW = Date.parse("2026-12-01T16:20:00Z");

// opencode's log lines, as recorded (tests/agents/corpus/opencode/quota_daily.jsonl).
const QUOTA_LINE =
  'timestamp=2026-12-01T16:19:43.330Z level=ERROR run=3ed90e15 message="stream error" providerID=mock modelID=gpt-5 session.id=ses_dcd9 small=false agent=build mode=primary error.error="AI_APICallError: You exceeded your current quota, please check your plan and billing details."';
const TITLE_LINE =
  'timestamp=2026-12-01T16:19:55.928Z level=ERROR run=3ed90e15 message="stream error" providerID=mock modelID=gpt-5 session.id=ses_dcd9 small=true agent=title mode=primary error.error="AI_RetryError: Failed after 3 attempts. Last error: You exceeded your current quota"';
const RATE_LINE =
  'timestamp=2026-12-01T16:19:43.330Z level=ERROR run=3ed90e15 message="stream error" providerID=mock modelID=gpt-5 session.id=ses_dcd9 small=false agent=build mode=primary error.error="AI_APICallError: Rate limit reached for gpt-5 in organization org-x on tokens per min. Please try again in 8s."';
const INFO_LINE =
  "timestamp=2026-12-01T16:19:55.099Z level=INFO run=3ed90e15 message=stream providerID=mock modelID=gpt-5";

// Claude Code's retried API error record (cli.js nE7) and qwen-code's api_error telemetry record.
const CLAUDE_RETRY = {
  type: "system",
  subtype: "api_error",
  error: { status: 529, error: { error: { type: "overloaded_error", message: "Overloaded" } } },
  retryInMs: 1200,
  retryAttempt: 3,
  maxRetries: 10,
};
// The same record of the monthly spend limit, as recorded
// (tests/agents/corpus/claude-agent-acp/quota_daily_retried.jsonl, its first api_error).
const CLAUDE_QUOTA = {
  type: "system",
  subtype: "api_error",
  error: {
    status: 429,
    error: {
      type: "error",
      error: {
        type: "rate_limit_error",
        message:
          "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC.",
        details: { error_code: "enforced_spend_limit_reached" },
      },
    },
  },
  retryInMs: 543,
  retryAttempt: 1,
  maxRetries: 10,
};
const QWEN_QUOTA = {
  type: "system",
  subtype: "ui_telemetry",
  systemPayload: {
    uiEvent: {
      "event.name": "qwen-code.api_error",
      error_message: "Free allocated quota exceeded.",
      status_code: 429,
    },
  },
};

const line = (text: string, offset = 0) => ({ path: "/log/opencode.log", offset, text });
const record = (value: unknown, offset = 0) => ({ path: "/chats/s.jsonl", offset, record: value });

describe("attemptsIn: new evidence → the agent's failed attempts", () => {
  const rows: {
    name: string;
    agent: string;
    lines?: string[];
    records?: unknown[];
    seen?: number;
    want: Partial<AgentAttempt>[];
  }[] = [
    {
      name: "an opencode quota line: quota, not retryable",
      agent: "opencode",
      lines: [INFO_LINE, QUOTA_LINE],
      want: [{
        n: 1,
        category: "quota",
        retryable: false,
        source: { kind: "log", path: "/log/opencode.log" },
      }],
    },
    {
      name: "its title generator's line is a side request's, no attempt",
      agent: "opencode",
      lines: [TITLE_LINE],
      want: [],
    },
    {
      name: "a rate limit with the wait it names: retryable, next in 8 s",
      agent: "opencode",
      lines: [RATE_LINE],
      seen: 4,
      want: [{ n: 5, category: "rate_limit", retryable: true, nextInMs: 8000 }],
    },
    {
      name: "two attempts in one look are numbered in order",
      agent: "opencode",
      lines: [QUOTA_LINE, INFO_LINE, QUOTA_LINE],
      seen: 1,
      want: [{ n: 2, category: "quota" }, { n: 3, category: "quota" }],
    },
    {
      name: "claude's retried 529 record: capacity, retryable, its status as code",
      agent: "claude",
      records: [CLAUDE_RETRY],
      want: [{
        n: 1,
        category: "capacity",
        retryable: true,
        code: 529,
        nextInMs: 1200,
        agentN: 3,
        source: { kind: "records", path: "/chats/s.jsonl" },
      }],
    },
    {
      name: "claude's retried spend limit: quota, next in its own 543 ms, the reset (passed) apart",
      agent: "claude",
      records: [CLAUDE_QUOTA],
      seen: 2,
      want: [{
        n: 3,
        category: "quota",
        code: 429,
        nextInMs: 543,
        agentN: 1,
        retryAfterMs: 0,
      }],
    },
    {
      name: "qwen's quota telemetry record: quota, not retryable",
      agent: "qwen",
      records: [{ type: "user" }, QWEN_QUOTA],
      want: [{ n: 1, category: "quota", retryable: false, code: 429 }],
    },
    {
      name: "records that are no error are no attempt",
      agent: "qwen",
      records: [{ type: "user" }, { type: "assistant", message: { parts: [{ text: "hi" }] } }],
      want: [],
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const { classifier, readers } = profileOf(row.agent);
      const got = attemptsIn(
        {
          lines: (row.lines ?? []).map((t, i) => line(t, i * 1000)),
          records: (row.records ?? []).map((r, i) => record(r, i * 100)),
        },
        { classifier, readers, logFormat: "plain", pid: null, seen: row.seen ?? 0, now: NOW },
      );
      expect(got.length).toBe(row.want.length);
      row.want.forEach((w, i) => expect(got[i]).toMatchObject(w));
      for (const a of got) expect(a.at).toBe(new Date(NOW).toISOString());
    });
  }
});

describe("attemptsSummary", () => {
  test("says the last attempt's cause, number and wait", () => {
    const a: AgentAttempt = {
      n: 14,
      at: "x",
      cause: "Service Unavailable",
      category: "capacity",
      code: 503,
      retryable: true,
      nextInMs: 8000,
      source: { kind: "log", path: "/l" },
    };
    expect(attemptsSummary([a])).toBe(
      "the agent was retrying a 503 (capacity), attempt 14, next in 8s",
    );
    expect(attemptsSummary([])).toBeNull();
  });
});

describe("keepAttempt: a turn's attempts stay bounded", () => {
  test("the first and the newest are kept; the note says how many were left out", () => {
    const list: AgentAttempt[] = [];
    const at = (n: number): AgentAttempt => ({
      n,
      at: "x",
      cause: "c",
      category: "rate_limit",
      retryable: true,
      source: { kind: "log", path: "/l" },
    });
    for (let n = 1; n <= MAX_ATTEMPTS_KEPT; n++) keepAttempt(list, at(n));
    expect(attemptsNote(list)).toBeNull();
    for (let n = MAX_ATTEMPTS_KEPT + 1; n <= 1000; n++) keepAttempt(list, at(n));
    expect(list.length).toBe(MAX_ATTEMPTS_KEPT);
    expect(list[0].n).toBe(1);
    expect(list[1].n).toBe(1000 - MAX_ATTEMPTS_KEPT + 2);
    expect(list.at(-1)!.n).toBe(1000);
    expect(attemptsNote(list)).toBe(
      `the agent made 1000 failed attempts; agentAttempts keeps the first and the last ${
        MAX_ATTEMPTS_KEPT - 1
      }`,
    );
  });

  test("a record's long cause is cut to the cause limit", () => {
    const { classifier, readers } = profileOf("qwen");
    const long = structuredClone(QWEN_QUOTA);
    long.systemPayload.uiEvent.error_message = `quota exceeded ${"x".repeat(10_000)}`;
    const [a] = attemptsIn({ lines: [], records: [record(long)] }, {
      classifier,
      readers,
      logFormat: "plain",
      pid: null,
      seen: 0,
      now: NOW,
    });
    expect(new TextEncoder().encode(a.cause).length).toBeLessThanOrEqual(500);
  });
});

/** A ticker the test turns by hand. */
function handTicker(): Ticker & { tick(): void } {
  let fn: (() => void) | null = null;
  return {
    every(_ms, tick) {
      fn = tick;
      return () => (fn = null);
    },
    tick() {
      fn?.();
    },
  };
}

describe("AttemptFollower: follows a growing log", () => {
  test("each look tells the attempts of the whole lines gained since the last one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-follow-"));
    const log = join(dir, "opencode.log");
    writeFileSync(log, `${QUOTA_LINE}\n`); // before the turn: not this turn's
    const { classifier, readers } = profileOf("opencode");
    const seen: AgentAttempt[] = [];
    const follower = new AttemptFollower({
      logs: takeSnapshot([log], Date.now()),
      logFormat: "plain",
      records: null,
      startedAt: Date.now(),
      classifier,
      readers,
      pid: () => null,
      onAttempt: (a) => seen.push(a),
    });
    const ticker = handTicker();
    follower.start(ticker);
    await follower.look();
    expect(seen).toEqual([]);
    appendFileSync(log, `${INFO_LINE}\n${QUOTA_LINE.slice(0, 50)}`);
    await follower.look();
    expect(seen).toEqual([]); // a line still being written is not read yet
    appendFileSync(log, `${QUOTA_LINE.slice(50)}\n${RATE_LINE}\n`);
    await follower.look();
    expect(seen.map((a) => [a.n, a.category])).toEqual([[1, "quota"], [2, "rate_limit"]]);
    await follower.look();
    expect(seen.length).toBe(2); // nothing new: nothing told twice
    follower.stop();
    appendFileSync(log, `${QUOTA_LINE}\n`);
    ticker.tick();
    await follower.look();
    expect(seen.length).toBe(2);
  });

  test("a file it cannot read is told once, and no attempt comes of it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-follow-"));
    const target = join(dir, "elsewhere.txt");
    writeFileSync(target, "");
    const { classifier, readers } = profileOf("opencode");
    const told: string[] = [];
    const seen: AgentAttempt[] = [];
    const follower = new AttemptFollower({
      logs: takeSnapshot([join(dir, "*.log")], Date.now()),
      logFormat: "plain",
      records: null,
      startedAt: Date.now(),
      classifier,
      readers,
      pid: () => null,
      onAttempt: (a) => seen.push(a),
      onDiagnostic: (line) => told.push(line),
    });
    // A symbolic link the agent put where its log goes: never followed.
    symlinkSync(target, join(dir, "opencode.log"));
    appendFileSync(target, `${QUOTA_LINE}\n`);
    await follower.look();
    appendFileSync(target, `${QUOTA_LINE}\n`);
    await follower.look();
    expect(seen).toEqual([]);
    expect(told.length).toBe(1);
    expect(told[0]).toContain("symbolic link");
  });

  test("follows session records that appear after the turn started", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-follow-"));
    mkdirSync(join(dir, "chats"));
    const file = join(dir, "chats", "s1.jsonl");
    const { classifier, readers } = profileOf("qwen");
    const seen: AgentAttempt[] = [];
    const follower = new AttemptFollower({
      logs: null,
      logFormat: "plain",
      records: { sessionId: "s1", snapshot: takeSnapshot([file], Date.now()) },
      startedAt: Date.now(),
      classifier,
      readers,
      pid: () => null,
      onAttempt: (a) => seen.push(a),
    });
    writeFileSync(file, `${JSON.stringify({ type: "user" })}\n${JSON.stringify(QWEN_QUOTA)}\n`);
    await follower.look();
    appendFileSync(file, `${JSON.stringify(QWEN_QUOTA)}\n`);
    await follower.look();
    expect(seen.map((a) => [a.n, a.category, a.source.kind])).toEqual([
      [1, "quota", "records"],
      [2, "quota", "records"],
    ]);
  });
});
