import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { builtinPlugins } from "../../../lib/config/packs.ts";
import { buildClassifier } from "../../../lib/cause/classifier.ts";
import { mergeConfigs, parseConfigText } from "../../../lib/config/config.ts";
import { gatherBeyondWire } from "../../../lib/proxy/beyond_wire.ts";
import { decide, recordIsSpecific, weighRecords } from "../../../lib/core/decide.ts";
import { newTurn, observeUpdate } from "../../../lib/proxy/turns.ts";
import { scanRecords } from "../../../lib/cli/scan.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  droppedAnswer,
  emptyFinalMessage,
  repeatedStarts,
  restartedAttempts,
  shorterThanRecorded,
  zeroOutputUsage,
} from "../../../lib/cause/contradictions.ts";
import {
  foldRecordEvents,
  type ReadEvent,
  readRecordEvents,
  recordFacts,
} from "../../../lib/cause/record_evidence.ts";
import type { RecordEvent } from "../../../lib/plugin/api.ts";
import {
  parseRecordLines,
  readSessionRecords,
  recordPatterns,
  snapshotSessionRecords,
} from "../../../lib/cause/session_records.ts";
import { expandPatterns } from "../../../lib/io/glob.ts";
import { readClaudeRecord } from "../../../plugins/claude_records.ts";
import { readCodexRecord } from "../../../plugins/codex_records.ts";
import { readGeminiRecord } from "../../../plugins/gemini_records.ts";
import type { Profile } from "../../../lib/config/config.ts";

const ev = (event: RecordEvent, offset = 0): ReadEvent => ({
  event,
  reader: "t",
  path: "/f",
  offset,
});

describe("foldRecordEvents", () => {
  const prompt = ev({ kind: "prompt" });
  const err = ev({ kind: "error", cause: "API Error: 429 rate", retrying: true }, 5);
  const final = ev({ kind: "reply", final: true, text: "the answer" }, 9);
  test("an error then a final answer: recovered, no error", () => {
    const v = foldRecordEvents([prompt, err, final]);
    expect([v.error, v.recovered, v.finalText]).toEqual([null, true, "the answer"]);
  });
  test("a final answer then an error: the turn ended on the error", () => {
    const v = foldRecordEvents([prompt, final, err]);
    expect(v.error?.event.cause).toBe("API Error: 429 rate");
  });
  test("events before the turn's prompt belong to an earlier turn", () => {
    const v = foldRecordEvents([err, prompt, final]);
    expect([v.error, v.recovered]).toEqual([null, false]);
    expect(foldRecordEvents([err, prompt]).error).toBeNull();
  });
  test("an answer-first prompt with nothing final after it is unanswered", () => {
    const first = ev({ kind: "prompt", answerFirst: true });
    expect(foldRecordEvents([first]).unanswered).toBe(first);
    expect(foldRecordEvents([first, final]).unanswered).toBeNull();
    expect(foldRecordEvents([first, err]).unanswered).toBeNull(); // the error says more
    expect(foldRecordEvents([prompt]).unanswered).toBeNull(); // no promise made
  });
  test("a stop and an abort are kept unless a final answer follows", () => {
    const stop = ev({ kind: "stop", stopReason: "max_tokens" });
    const aborted = ev({ kind: "aborted", cause: "codex aborted the turn (replaced)" });
    expect(foldRecordEvents([prompt, stop]).stop?.event.stopReason).toBe("max_tokens");
    expect(foldRecordEvents([prompt, aborted]).aborted?.event.cause).toContain("replaced");
    expect(foldRecordEvents([prompt, aborted, final]).aborted).toBeNull();
  });
  test("output counted for a response the agent recorded nothing of: a dropped answer", () => {
    const usage = (output: number, offset = 20) => ev({ kind: "usage", output }, offset);
    const call = ev({ kind: "reply", final: false }, 15);
    const aborted = ev({
      kind: "aborted",
      cause: "codex completed the turn without a final message",
    });
    const dropped = usage(9);
    expect(foldRecordEvents([prompt, dropped, aborted]).dropped?.offset).toBe(dropped.offset);
    // a message, or a tool call, before the usage is what the output was
    expect(foldRecordEvents([prompt, final, usage(9)]).dropped).toBeNull();
    expect(foldRecordEvents([prompt, call, usage(9), aborted]).dropped).toBeNull();
    // no output (or reasoning only, which readers leave out), or a final answer after it
    expect(foldRecordEvents([prompt, usage(0), aborted]).dropped).toBeNull();
    expect(foldRecordEvents([prompt, usage(9), final]).dropped).toBeNull();
    // the second response of a turn left nothing: dropped
    expect(foldRecordEvents([prompt, call, usage(5), usage(9, 30), aborted]).dropped?.offset)
      .toBe(30);
    // an earlier turn's dropped answer is not this turn's
    expect(foldRecordEvents([prompt, dropped, aborted, prompt, final]).dropped).toBeNull();
  });
  test("a dropped answer is a refusal; an error the turn ended on says more (decide weighs)", () => {
    const aborted = ev({
      kind: "aborted",
      cause: "codex completed the turn without a final message",
    });
    const dropped = foldRecordEvents([prompt, ev({ kind: "usage", output: 9 }), aborted]);
    const facts = recordFacts(dropped, buildClassifier([]), Date.now(), []);
    expect(facts.dropped?.error.message).toContain("9 output token(s)");
    const reading = weighRecords(facts);
    expect(reading.stop?.stopReason).toBe("refusal");
    expect(reading.cut).toBeNull();
    const failed = foldRecordEvents([prompt, ev({ kind: "usage", output: 9 }), err]);
    const withError = weighRecords(recordFacts(failed, buildClassifier([]), Date.now(), []));
    expect(withError.stop).toBeNull();
    expect(withError.cut?.error.message).toBe("API Error: 429 rate");
  });
  test("a record's category, code and retry time win over the words", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    const quota = ev({
      kind: "error",
      cause: "Rate limit exceeded",
      code: "insufficient_quota",
      category: "quota",
      retryAfterMs: 60_000,
    });
    const facts = recordFacts(foldRecordEvents([prompt, quota]), buildClassifier([]), now, []);
    expect(recordIsSpecific(facts)).toBe(true);
    expect(facts.error?.error).toMatchObject({ category: "quota", code: "insufficient_quota" });
    expect(facts.error?.retry).toMatchObject({ afterMs: 60_000 });
    const at = ev({
      kind: "error",
      cause: "busy",
      category: "capacity",
      retryAt: "2026-01-01T00:05:00Z",
    });
    const later = recordFacts(foldRecordEvents([prompt, at]), buildClassifier([]), now, []);
    expect(later.error?.retry).toMatchObject({ retryable: true, afterMs: 300_000 });
    // A retry time that is no time makes the event invalid: a diagnostic, not evidence.
    const diagnostics: string[] = [];
    const bad = readRecordEvents([{ path: "/f", offset: 0, record: {} }], [{
      id: "bad",
      read: () => ({ kind: "error", cause: "busy", retryAfterMs: -1 }),
    }], diagnostics);
    expect([bad, diagnostics.join("\n")]).toEqual([
      [],
      expect.stringContaining("retryAfterMs must be a finite number"),
    ]);
    // A bare HTTP status and words only: not more specific than the wire.
    const bare = ev({ kind: "error", cause: "API Error: 429 rate", code: 429 });
    expect(
      recordIsSpecific(recordFacts(foldRecordEvents([prompt, bare]), buildClassifier([]), now, [])),
    )
      .toBe(false);
  });
});

describe("wire contradictions", () => {
  test("zero output tokens for a turn that streamed text", () => {
    const usage = { usage: { inputTokens: 120, outputTokens: 0, totalTokens: 120 } };
    expect(zeroOutputUsage(usage, 40)).toContain("0 output tokens");
    expect(zeroOutputUsage(usage, 0)).toBeNull();
    expect(zeroOutputUsage({ usage: { inputTokens: 120, outputTokens: 9 } }, 40)).toBeNull();
    // a gateway that reports no usage at all (all zeros) is no evidence
    expect(zeroOutputUsage({ usage: { inputTokens: 0, outputTokens: 0 } }, 40)).toBeNull();
    expect(zeroOutputUsage({ stopReason: "end_turn" }, 40)).toBeNull();
  });
  test("a fragment restarted after a silent gap is a new attempt; a repeated phrase is not", () => {
    const a = "Here is the plan: first, ";
    const b = "Here is the plan: first, read the file. Done.";
    expect(restartedAttempts(a + a + b, [a.length, 2 * a.length])).toEqual([
      0,
      a.length,
      2 * a.length,
    ]);
    // the same text without a break at the restart: one attempt
    expect(restartedAttempts(a + b, [])).toBeNull();
    // a break where the text goes on with other words: one attempt
    expect(restartedAttempts(a + "and then something else", [a.length])).toBeNull();
    // too short a fragment to tell
    expect(restartedAttempts("OK. OK.", [4])).toBeNull();
  });
  test("usage that counts output for a turn that showed nothing: a dropped answer", () => {
    // gemini-cli's refusal as recorded: end_turn, nothing streamed, 9 output tokens in _meta
    const gemini = {
      stopReason: "end_turn",
      _meta: { quota: { token_count: { input_tokens: 12, output_tokens: 9 } } },
    };
    expect(droppedAnswer(gemini, 0, 0)).toContain("9 output tokens");
    expect(droppedAnswer(gemini, 5, 0)).toBeNull(); // text came
    expect(droppedAnswer(gemini, 0, 2)).toBeNull(); // a tool call or a thought came
    expect(droppedAnswer({ usage: { inputTokens: 3, outputTokens: 0 } }, 0, 0)).toBeNull();
    expect(droppedAnswer({ stopReason: "end_turn" }, 0, 0)).toBeNull();
    // the same _meta usage feeds the zero-output rule
    const zero = { _meta: { quota: { token_count: { input_tokens: 12, output_tokens: 0 } } } };
    expect(zeroOutputUsage(zero, 10)).toContain("0 output tokens");
  });
  test("an end_turn whose final message never got content", () => {
    expect(emptyFinalMessage("end_turn", { id: "m2", chars: 0 })).toContain("m2");
    expect(emptyFinalMessage("end_turn", { id: "m2", chars: 4 })).toBeNull();
    expect(emptyFinalMessage("end_turn", null)).toBeNull();
    expect(emptyFinalMessage("max_tokens", { id: "m2", chars: 0 })).toBeNull();
  });
});

describe("record readers (formats from the agents' sources)", () => {
  test("Claude Code transcript", () => {
    expect(readClaudeRecord({ type: "user", message: { role: "user", content: "hi" } })).toEqual({
      kind: "prompt",
    });
    expect(
      readClaudeRecord({
        type: "user",
        message: { content: [{ type: "tool_result", tool_use_id: "t", content: "x" }] },
      }),
    ).toBeNull();
    expect(
      readClaudeRecord({
        type: "assistant",
        isApiErrorMessage: true,
        error: "overloaded",
        message: {
          content: [{
            type: "text",
            text: 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}',
          }],
        },
      }),
    ).toMatchObject({ kind: "error", category: "capacity", code: 529 });
    expect(
      readClaudeRecord({
        type: "assistant",
        isApiErrorMessage: true,
        error: "max_output_tokens",
        message: { content: [{ type: "text", text: "API Error: Claude's response exceeded" }] },
      }),
    ).toMatchObject({ kind: "stop", stopReason: "max_tokens" });
    expect(
      readClaudeRecord({
        type: "system",
        subtype: "api_error",
        error: { status: 429, error: { type: "error", error: { message: "rate limited" } } },
        retryInMs: 543,
        retryAttempt: 1,
        maxRetries: 10,
      }),
    ).toEqual({
      kind: "error",
      retrying: true,
      cause: "API Error: 429 rate limited (retry 1 of 10)",
      code: 429,
      nextAttemptInMs: 543,
      attempt: 1,
    });
    expect(
      readClaudeRecord({
        type: "assistant",
        message: { content: [{ type: "text", text: "done" }], stop_reason: "end_turn" },
      }),
    ).toEqual({ kind: "reply", final: true, text: "done" });
    expect(
      readClaudeRecord({
        type: "assistant",
        message: { content: [{ type: "text", text: "I can't" }], stop_reason: "refusal" },
      }),
    ).toMatchObject({ kind: "stop", stopReason: "refusal" });
  });
  test("codex rollout", () => {
    const line = (payload: unknown) => ({ timestamp: "t", type: "event_msg", payload });
    expect(readCodexRecord(line({ type: "user_message", message: "hi" }))).toEqual({
      kind: "prompt",
    });
    expect(readCodexRecord(line({ type: "agent_message", message: "ok" }))).toEqual({
      kind: "reply",
      final: true,
      text: "ok",
    });
    expect(readCodexRecord(line({ type: "task_complete", last_agent_message: "ok" }))).toEqual({
      kind: "reply",
      final: true,
      text: "ok",
    });
    expect(readCodexRecord(line({ type: "task_complete", last_agent_message: null })))
      .toMatchObject({ kind: "aborted" });
    expect(readCodexRecord(line({ type: "turn_aborted", reason: "replaced" }))).toMatchObject({
      kind: "aborted",
    });
    expect(readCodexRecord(line({ type: "stream_error", message: "reconnecting 1/5" })))
      .toMatchObject({ kind: "error", retrying: true });
    // token_count: the response's output tokens, reasoning left out; no count, no event
    const usage = (last: unknown) =>
      line({ type: "token_count", info: { last_token_usage: last } });
    expect(readCodexRecord(usage({ output_tokens: 9, reasoning_output_tokens: 0 }))).toEqual({
      kind: "usage",
      output: 9,
    });
    expect(readCodexRecord(usage({ output_tokens: 64, reasoning_output_tokens: 64 }))).toEqual({
      kind: "usage",
      output: 0,
    });
    expect(readCodexRecord(line({ type: "token_count", info: null, rate_limits: {} }))).toBeNull();
    // a tool call the model made is output too (not an answer)
    expect(readCodexRecord({ type: "response_item", payload: { type: "function_call" } }))
      .toEqual({ kind: "reply", final: false });
    expect(readCodexRecord({ type: "response_item", payload: { type: "message" } })).toBeNull();
  });
  test("gemini-cli chat records", () => {
    expect(readGeminiRecord({ id: "1", type: "user", content: [{ text: "hi" }] })).toEqual({
      kind: "prompt",
      answerFirst: true,
    });
    expect(readGeminiRecord({ id: "4", type: "gemini", content: "", toolCalls: [{ id: "t" }] }))
      .toEqual({ kind: "reply", final: true });
    expect(readGeminiRecord({ id: "5", type: "gemini", content: "" })).toBeNull();
    expect(readGeminiRecord({ id: "2", type: "gemini", content: "answer" })).toEqual({
      kind: "reply",
      final: true,
      text: "answer",
    });
    expect(readGeminiRecord({ id: "3", type: "error", content: "status 429 quota" }))
      .toMatchObject({ kind: "error", code: 429 });
    expect(readGeminiRecord({ $set: { lastUpdated: "x" } })).toBeNull();
  });
});

describe("session record files", () => {
  const profile = (patterns: string[]): Profile => ({
    name: "t",
    match: [],
    logs: [],
    logFormat: "plain",
    anchors: null,
    sessionRecords: patterns,
  });
  test("patterns: ${VAR:-default}, {session} and {session:N}; unsafe ids read nothing", () => {
    const one = (t: string, env: Record<string, string>) =>
      expandPatterns([t], { env, cwd: "/w" }).patterns;
    expect(one("${CODEX_HOME:-$HOME/.codex}/s", { HOME: "/h" })).toEqual(["/h/.codex/s"]);
    expect(one("${CODEX_HOME:-$HOME/.codex}/s", { HOME: "/h", CODEX_HOME: "/c" })).toEqual([
      "/c/s",
    ]);
    expect(
      recordPatterns(["$HOME/{session}.jsonl", "/x/s-{session:8}.jsonl"], "abcdef123456", {
        HOME: "/h",
      }).patterns,
    ).toEqual(["/h/abcdef123456.jsonl", "/x/s-abcdef12.jsonl"]);
    for (const bad of ["../etc", "a/b", "*", "", "a\nb"]) {
      const r = recordPatterns(["/h/{session}.jsonl"], bad, {});
      expect(r.patterns).toEqual([]);
      expect(r.problem).toContain("cannot name");
    }
  });
  test("only what the turn appended, complete lines, and never another session's file", async () => {
    const home = mkdtempSync(join(tmpdir(), "tg-records-"));
    const dir = join(home, "p");
    mkdirSync(dir);
    const mine = join(dir, "s-abcdefgh-1.jsonl");
    const other = join(dir, "s-abcdefgh-2.jsonl");
    writeFileSync(mine, JSON.stringify({ sessionId: "abcdefgh-1", old: "error" }) + "\n");
    const taken = snapshotSessionRecords(
      profile([`${dir}/s-{session:8}-*.jsonl`]),
      {},
      "abcdefgh-1",
      Date.now(),
    );
    appendFileSync(mine, JSON.stringify({ sessionId: "abcdefgh-1", n: 1 }) + '\n{"n":');
    writeFileSync(other, JSON.stringify({ sessionId: "abcdefgh-2", n: 2 }) + "\n");
    const read = await readSessionRecords(taken, Date.now() - 10);
    expect(read.records.map((r) => r.record)).toEqual([{ sessionId: "abcdefgh-1", n: 1 }]);
    expect(read.diagnostics.join("\n")).toContain("belong to session abcdefgh-2");
  });
  test("a read window that cuts a line skips it", () => {
    const text = 'cut"}\n{"a":1}\nnot json\n';
    expect(parseRecordLines("/f", 100, text, true)).toEqual({
      records: [{ path: "/f", offset: 106, record: { a: 1 } }],
      bad: 1,
    });
  });
});

describe("real session files (recorded from the real agents against the corpus mock API)", () => {
  // tests/fixtures/records/*-ok.jsonl: the session file each agent wrote for one clean turn
  // ("What is 2+2?"), as the corpus recorder captured it (long strings shortened).
  const registry = builtinPlugins();
  const cases: Array<[string, string]> = [
    ["claude-agent-acp", "claude"],
    ["claude-code-acp", "claude"],
    ["codex-acp", "codex"],
    ["gemini-cli", "gemini"],
  ];
  for (const [agent, profile] of cases) {
    test(`${agent}: the prompt, then the final answer; no failure`, () => {
      const file = join(
        import.meta.dirname ?? ".",
        "..",
        "..",
        "fixtures",
        "records",
        `${agent}-ok.jsonl`,
      );
      const readers = registry.readers.filter((r) => r.agents?.includes(profile));
      expect(readers.length).toBe(1);
      const r = scanRecords(
        file,
        readFileSync(file, "utf8"),
        readers,
        buildClassifier([]),
        Date.now(),
      );
      const events = r.events.map((e) => e.event);
      expect(events[0].kind).toBe("prompt");
      expect(events.at(-1)).toEqual({
        kind: "reply",
        final: true,
        text: "The answer is 4: two plus two makes four.",
      });
      expect(events.slice(1).every((e) => e.kind === "reply" || e.kind === "usage")).toBe(true);
      expect(r.lastTurn).toEqual({ cut: null, stop: null, recovered: false });
      expect(r.diagnostics).toEqual([]);
    });
  }
});

describe("attempts and answers, told by text alone", () => {
  test("a broken reply's attempts by its first characters", () => {
    const p = "The answer is 4: two plus";
    expect(repeatedStarts(p + p)).toEqual([0, 25]);
    expect(repeatedStarts(p + p + "The answer")).toEqual([0, 25]);
    expect(repeatedStarts(p)).toBeNull();
    expect(repeatedStarts("ab ab ab")).toBeNull(); // too short to tell
  });
  test("a streamed reply shorter than the answer the agent recorded", () => {
    const answer = "The answer is 4: two plus two makes four.";
    expect(shorterThanRecorded("The answer is 4: two plus", answer)).toContain("25 of the 41");
    expect(shorterThanRecorded("The ans", answer)).toContain("7 of the 41");
    expect(shorterThanRecorded(answer, answer)).toBeNull();
    expect(shorterThanRecorded(answer + "\n", answer)).toBeNull();
    // text streamed before the final message (a step, a tool call) is not compared
    expect(shorterThanRecorded("Let me check. " + answer, answer)).toBeNull();
    expect(shorterThanRecorded("Something else", answer)).toBeNull();
  });
});

describe("gatherBeyondWire (records and wire together)", () => {
  const claudeReaders = builtinPlugins().readers.filter((r) => r.agents?.includes("claude"));
  function turnWith(chunks: string[]) {
    const turn = newTurn({
      sessionId: "s",
      requestId: 1,
      promptLine: new Uint8Array(),
      promptMeta: undefined,
      startedAt: 0,
      snapshot: { patterns: [], files: new Map(), takenAt: 0, diagnostics: [] },
      trackToolCalls: false,
    }, 1);
    chunks.forEach((text, i) =>
      observeUpdate(turn, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text },
      }, i)
    );
    return turn;
  }
  const rec = (record: unknown) => ({ path: "/t.jsonl", offset: 0, record });
  const gather = (chunks: string[], records: unknown[], result: unknown = {}) => {
    const diagnostics: string[] = [];
    const out = gatherBeyondWire({
      turn: turnWith(chunks),
      result,
      stopReason: "end_turn",
      records: { records: records.map(rec), diagnostics: [] },
      readers: claudeReaders,
      classifier: buildClassifier([]),
      now: 0,
    }, diagnostics);
    return { ...out.facts, finalText: out.finalText, diagnostics };
  };
  const user = { type: "user", message: { content: "q" } };
  const retry = { type: "system", subtype: "api_error", error: { status: 529 } };
  const answer = (text: string) => ({
    type: "assistant",
    message: { content: [{ type: "text", text }], stop_reason: "end_turn" },
  });

  test("recovered: reply.text is the recorded final answer the stream ends with", () => {
    const out = gather(["Partial stu", "ff. The full answer."], [
      user,
      retry,
      answer("The full answer."),
    ]);
    expect([out.records?.error ?? null, out.finalText]).toEqual([null, "The full answer."]);
  });
  test("clean: no cut, no final text of its own, whatever the usage says", () => {
    const out = gather(["All ", "good."], [user, answer("All good.")], {
      usage: { inputTokens: 5, outputTokens: 0 },
    });
    expect([out.records?.error, out.records?.stop, out.finalText, out.records?.final]).toEqual([
      null,
      null,
      null,
      true,
    ]);
    // The usage contradicts the wire, but the records hold the final answer: decide keeps ok.
    expect(out.contradiction?.error.anchor).toBe("wire");
    const d = decide({
      cancelled: false,
      exit: null,
      stopReason: "end_turn",
      agentError: null,
      output: 9,
      logCause: null,
      timeout: null,
      ...out,
    });
    expect([d.status, d.notes?.join("\n")]).toEqual([
      "ok",
      expect.stringContaining(
        "records hold its final answer",
      ),
    ]);
  });
  test("no records: the wire's contradictions alone", () => {
    const diagnostics: string[] = [];
    const out = gatherBeyondWire({
      turn: turnWith(["half"]),
      result: { usage: { inputTokens: 5, outputTokens: 0 } },
      stopReason: "end_turn",
      records: null,
      readers: [],
      classifier: buildClassifier([]),
      now: 0,
    }, diagnostics);
    expect([out.facts.records, out.facts.contradiction?.error.anchor]).toEqual([null, "wire"]);
  });
});

describe("session_records in the config", () => {
  test("a pattern without {session} is an error naming the file, line and key", () => {
    const toml = `[agent.mine]\nmatch = ["mine"]\nsession_records = ["/x/*.jsonl"]\n`;
    expect(() => parseConfigText("/c/anchors.toml", toml)).toThrow(
      /\/c\/anchors.toml:3.*agent\.mine\.session_records\[0\].*must name \{session\}/,
    );
    const ok = parseConfigText("/c/anchors.toml", toml.replace("*.jsonl", "{session}.jsonl"));
    expect(mergeConfigs([ok]).profiles.get("mine")?.sessionRecords).toEqual([
      "/x/{session}.jsonl",
    ]);
  });
  test("the settle window is bounded", () => {
    const toml = `[agent.mine]\nrecords_settle_ms = 60000\n`;
    expect(() => parseConfigText("/c/anchors.toml", toml)).toThrow(/records_settle_ms/);
  });
});
