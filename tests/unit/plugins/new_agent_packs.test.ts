/**
 * The record readers and log reading of the opencode, qwen-code and pi packs, on records as the
 * agents wrote them in tests/agents/corpus (trimmed to the fields that matter).
 */
import { describe, expect, test } from "bun:test";
import { readPiRecord } from "../../../plugins/pi_records.ts";
import { readQwenRecord } from "../../../plugins/qwen_records.ts";
import opencode, { logfmtValue, sdkCause } from "../../../plugins/opencode.ts";
import { PLUGIN_CONTEXT } from "../../../lib/plugin_api.ts";

const assistant = (stopReason: string, extra: Record<string, unknown> = {}) => ({
  type: "message",
  message: { role: "assistant", content: [], stopReason, ...extra },
});

describe("pi session entries", () => {
  const cases: [string, unknown, unknown][] = [
    ["a user message opens the turn", {
      type: "message",
      message: { role: "user", content: [{ type: "text", text: "What is 2+2?" }] },
    }, { kind: "prompt", answerFirst: true }],
    ["an answer", assistant("stop", { content: [{ type: "text", text: "4" }] }), {
      kind: "reply",
      final: true,
      text: "4",
    }],
    ["a tool call is not the final answer", assistant("toolUse"), { kind: "reply", final: false }],
    ["the output limit", assistant("length", { content: [{ type: "text", text: "The ans" }] }), {
      kind: "stop",
      stopReason: "max_tokens",
    }],
    [
      "an API error, its status first",
      assistant("error", {
        errorMessage:
          '429: {"message":"Rate limit reached for gpt-5","code":"rate_limit_exceeded"}',
      }),
      {
        kind: "error",
        cause: '429: {"message":"Rate limit reached for gpt-5","code":"rate_limit_exceeded"}',
        code: 429,
      },
    ],
    [
      "a refused connection",
      assistant("error", { errorMessage: "Connection error.: connect ECONNREFUSED 127.0.0.1:1" }),
      { kind: "error", cause: "Connection error.: connect ECONNREFUSED 127.0.0.1:1" },
    ],
    [
      "pi-ai's content_filter finish is a refusal",
      assistant("error", { errorMessage: "Provider finish_reason: content_filter" }),
      { kind: "stop", stopReason: "refusal" },
    ],
    [
      "a stream with no finish_reason was cut",
      assistant("error", { errorMessage: "Stream ended without finish_reason" }),
      { kind: "error", cause: "Stream ended without finish_reason", category: "network" },
    ],
    ["other entries say nothing", { type: "model_change", provider: "mock" }, null],
  ];
  for (const [name, record, want] of cases) {
    test(name, () => expect(readPiRecord(record)).toEqual(want as never));
  }
});

describe("qwen-code chat records", () => {
  const telemetry = (uiEvent: Record<string, unknown>) => ({
    type: "system",
    subtype: "ui_telemetry",
    systemPayload: { uiEvent },
  });
  const cases: [string, unknown, unknown][] = [
    ["a user record opens the turn", {
      type: "user",
      message: { role: "user", parts: [{ text: "What is 2+2?" }] },
    }, { kind: "prompt", answerFirst: true }],
    ["an answer", {
      type: "assistant",
      message: { role: "model", parts: [{ text: "4" }] },
    }, { kind: "reply", final: true, text: "4" }],
    ["a tool call", {
      type: "assistant",
      message: { role: "model", parts: [{ functionCall: { name: "ls" } }] },
    }, { kind: "reply", final: false }],
    [
      "an API error with its status",
      telemetry({
        "event.name": "qwen-code.api_error",
        status_code: 429,
        error_type: "RateLimitError",
        error_message: "429 You exceeded your current quota",
      }),
      { kind: "error", cause: "429 You exceeded your current quota", code: 429 },
    ],
    [
      "a subagent's API error is another request's",
      telemetry({
        "event.name": "qwen-code.api_error",
        error_message: "Connection error.",
        subagent_id: "managed-auto-memory-extractor-1",
      }),
      null,
    ],
    [
      "a response is no error",
      telemetry({ "event.name": "qwen-code.api_response", status_code: 200 }),
      null,
    ],
  ];
  for (const [name, record, want] of cases) {
    test(name, () => expect(readQwenRecord(record)).toEqual(want as never));
  }
});

describe("opencode's log", () => {
  const anchor = opencode.anchors![0];
  const line = (small: boolean) =>
    `timestamp=2026-12-01T16:11:11.103Z level=ERROR run=c2a1a521 message="stream error" ` +
    `providerID=mock modelID=gpt-5 session.id=ses_1 small=${small} agent=title mode=primary ` +
    `error.error="AI_RetryError: Failed after 3 attempts. Last error: The server had an error"`;

  test("logfmt values, quoted or bare", () => {
    expect(logfmtValue(line(true), "message")).toBe("stream error");
    expect(logfmtValue(line(true), "small")).toBe("true");
    expect(logfmtValue('a=1 b="x \\"y\\""', "b")).toBe('x "y"');
    expect(logfmtValue("a=1", "error.error")).toBeNull();
  });

  test("the AI SDK's class and retry wrapper come off", () => {
    expect(sdkCause("AI_RetryError: Failed after 3 attempts. Last error: Overloaded")).toBe(
      "Overloaded",
    );
  });

  test("the title generator's failure (small=true) is not the turn's", () => {
    expect(anchor.match({ kind: "log", line: line(true) }, PLUGIN_CONTEXT)).toBeNull();
    expect(anchor.match({ kind: "log", line: line(false) }, PLUGIN_CONTEXT)).toMatchObject({
      cause: "The server had an error",
    });
  });

  test("a WARN line is no cause", () => {
    const warn = `level=WARN message="background dependency install failed" error="x"`;
    expect(anchor.match({ kind: "log", line: warn }, PLUGIN_CONTEXT)).toBeNull();
  });
});
