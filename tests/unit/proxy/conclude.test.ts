/**
 * `concludeTurn` (lib/proxy/conclude.ts): a proxied turn's Outcome and the response the client gets instead.
 */
import { describe, expect, test } from "bun:test";
import { isRetryable, retryReason } from "../../../lib/core/retry_hint.ts";
import { concludeTurn, exitMessage, type TurnEnd } from "../../../lib/proxy/conclude.ts";
import { peekUpdate } from "../../../lib/acp/peek.ts";
import { observeUpdate, observeUpdateLine, type Turn, turnText } from "../../../lib/proxy/turns.ts";
import type { Cause } from "../../../lib/core/decide.ts";
import { enc, testClassifier as anchors, testTurn as turn } from "../../helpers/units.ts";

describe("exitMessage", () => {
  test.each([
    [3, null, "fatal", "agent exited with status 3: fatal"],
    [0, null, "", "agent exited with status 0"],
    [null, "SIGKILL", "  ", "agent exited with status 137 (killed by SIGKILL)"],
  ])("exitMessage(%j, %j, %j)", (code, signal, tail, expected) => {
    expect(exitMessage(code, signal, tail)).toBe(expected);
  });
});

describe("concludeTurn", () => {
  const logCause: Cause = {
    error: {
      code: 429,
      message: "Individual quota reached",
      category: "quota",
      anchor: "t.log",
      source: { path: "/l", offset: 3 },
    },
    retry: { retryable: false, reason: "quota: no reset time given", afterMs: null, at: null },
  };
  function conclude(t: Turn, end: TurnEnd, found: Cause | null = null, rewriteErrors = false) {
    let scanned = 0;
    const c = concludeTurn({
      turn: t,
      end,
      agent: "fake",
      classifier: anchors(),
      endedAt: 5000,
      rewriteErrors,
      scanLogs:
        () => (scanned++, { cause: found, diagnostics: found ? [] : ["nothing in the log"] }),
    });
    return { ...c, scanned };
  }
  const result = (stopReason: string): TurnEnd => ({
    kind: "result",
    result: { stopReason },
    response: { jsonrpc: "2.0", id: 7, result: { stopReason } },
  });
  const say = (t: Turn, text: string) =>
    observeUpdate(t, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } }, 0);

  test("empty end_turn with a log cause → the client gets the cause as -32603", () => {
    const c = conclude(turn(), result("end_turn"), logCause);
    expect(c.scanned).toBe(1);
    expect(c.outcome).toMatchObject({
      mode: "proxy",
      agent: "fake",
      session: "s1",
      turn: 1,
      status: "failed",
      stopReason: "end_turn",
      durationMs: 4000,
      error: logCause.error,
    });
    expect(c.response).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32603,
        message: "Individual quota reached",
        data: {
          turnguard: {
            status: "failed",
            category: "quota",
            message: "Individual quota reached",
            code: 429,
            anchor: "t.log",
            retry: logCause.retry,
            source: { path: "/l", offset: 3 },
            stopReason: "end_turn",
          },
        },
      },
    });
  });

  test("empty end_turn without a cause stays empty and unchanged", () => {
    const c = conclude(turn(), result("end_turn"));
    expect([c.outcome.status, c.response, c.outcome.diagnostics]).toEqual(["empty", null, [
      "nothing in the log",
    ]]);
  });

  test("a streamed answer is ok and the log is not read", () => {
    const t = turn();
    say(t, "Here is the refactored function, with tests.");
    const c = conclude(t, result("end_turn"), logCause);
    expect([c.outcome.status, c.response, c.scanned, c.outcome.reply]).toEqual(["ok", null, 0, {
      chars: 44,
      text: "Here is the refactored function, with tests.",
    }]);
  });

  test.each([["max_tokens", "truncated"], ["max_turn_requests", "truncated"], [
    "refusal",
    "refused",
  ], ["cancelled", "cancelled"]])(
    "%s → %s, response unchanged, even when empty",
    (reason, status) => {
      const c = conclude(turn(), result(reason), logCause);
      expect([c.outcome.status, c.outcome.stopReason, c.response]).toEqual([status, reason, null]);
    },
  );

  test("a client cancel wins over an empty end_turn", () => {
    const t = turn();
    t.cancelled = true;
    const c = conclude(t, result("end_turn"), logCause);
    expect([c.outcome.status, c.response, c.scanned]).toEqual(["cancelled", null, 0]);
  });

  test("an unknown agent error is sharpened by the log cause", () => {
    const c = conclude(turn(), {
      kind: "error",
      error: { code: -32603, message: "Internal error" },
      response: { jsonrpc: "2.0", id: 7, error: { code: -32603, message: "Internal error" } },
    }, logCause);
    expect(c.outcome.error).toEqual({ ...logCause.error, code: -32603 });
    expect(c.response).toMatchObject({
      error: {
        code: -32603,
        message: "Internal error",
        data: { turnguard: { category: "quota", message: "Individual quota reached" } },
      },
    });
  });

  test("a short streamed failure notice of a clean turn is a diagnostic, never an error", () => {
    const t = turn();
    say(t, "You've hit your usage limit.");
    const c = conclude(t, result("end_turn"));
    expect([c.outcome.status, c.response, c.outcome.error, c.outcome.retry])
      .toEqual(["ok", null, null, null]);
    expect(c.outcome.diagnostics).toContain(
      "the agent's reply reads as a quota failure (anchor t.quota); the turn ended normally, so it stays ok",
    );
  });

  test("a bare wrapper error takes the cause the agent streamed just before it", () => {
    const t = turn();
    say(t, "You've hit your usage limit.");
    const c = conclude(t, {
      kind: "error",
      error: { code: -32000, message: "Authentication required" },
      response: {
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32000, message: "Authentication required" },
      },
    });
    expect([c.outcome.status, c.outcome.error?.category, c.outcome.error?.message])
      .toEqual(["failed", "quota", "usage limit."]);
  });

  test("text nobody reads is not kept: counted, no reply.text", () => {
    const t = turn("none");
    say(t, "héllo");
    const line = enc(
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"wörld"}}}}\n',
    );
    observeUpdateLine(t, peekUpdate(line)!, line, 1);
    const c = conclude(t, result("end_turn"));
    expect([c.outcome.status, c.outcome.reply, turnText(t)]).toEqual(["ok", { chars: 10 }, ""]);
  });

  test("with only text anchors reading it, a failure notice is still found", () => {
    const t = turn("notice");
    say(t, "You've hit your usage limit.");
    const c = conclude(t, result("end_turn"));
    const notice = (d: string[]) => d.some((x) => x.includes("reads as a quota failure"));
    expect([c.outcome.reply, notice(c.outcome.diagnostics)]).toEqual([{ chars: 28 }, true]);
    // A long reply is cut to the notice's size, and a cut reply is no notice.
    const long = turn("notice");
    say(long, "You've hit your usage limit. ".repeat(40));
    say(long, "x".repeat(5000));
    expect(turnText(long).length).toBe(2048);
    expect(notice(conclude(long, result("end_turn")).outcome.diagnostics)).toBe(false);
  });

  test("a long answer that mentions a rate limit is just an answer", () => {
    const t = turn();
    say(t, "I added a rate limit to the API. ".repeat(80));
    const c = conclude(t, result("end_turn"));
    expect([c.outcome.status, c.outcome.error]).toEqual(["ok", null]);
  });

  test("timeout", () => {
    const c = conclude(turn(), { kind: "timeout", silentMs: 90_000 });
    expect(c.outcome).toMatchObject({
      status: "failed",
      error: {
        category: "timeout",
        message: "turn timed out: the agent streamed nothing for 1m30s",
      },
    });
    expect(c.response).toMatchObject({
      id: 7,
      error: { code: -32603, message: "turn timed out: the agent streamed nothing for 1m30s" },
    });
  });

  test("the agent died: crash unless the log says more", () => {
    const end: TurnEnd = { kind: "exit", code: 2, signal: null, stderrTail: "boom" };
    const crash = conclude(turn(), end);
    expect([crash.outcome.error?.category, crash.outcome.exit]).toEqual(["crash", {
      code: 2,
      signal: null,
    }]);
    expect(crash.response).toMatchObject({
      error: { code: -32603, message: "agent exited with status 2: boom" },
    });
    expect(crash.outcome.retry).toEqual({
      retryable: isRetryable("crash", null),
      reason: retryReason("crash", null),
      afterMs: null,
      at: null,
    });
    const known = conclude(turn(), end, logCause);
    expect([known.outcome.error?.category, known.outcome.error?.message]).toEqual([
      "quota",
      "Individual quota reached",
    ]);
    expect(known.response).toMatchObject({
      error: { message: "agent exited with status 2: boom" },
    });
  });
});
