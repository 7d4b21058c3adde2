/**
 * `answer` (lib/proxy/answer_rules.ts): what the client receives for one request id, for
 * every state of the id and every event — the table of the one-answer-per-request rules.
 */
import { describe, expect, test } from "bun:test";
import {
  type Answer,
  answer,
  type AnswerEvent,
  fallbackResponse,
  type RequestView,
} from "../../../lib/proxy/answer_rules.ts";
import type { TurnEnd } from "../../../lib/proxy/conclude.ts";

const ID = 7;
const RESULT = { stopReason: "end_turn" };
const resultMsg = {
  kind: "result" as const,
  id: ID,
  result: RESULT,
  raw: { jsonrpc: "2.0", id: ID, result: RESULT },
};
const ERROR = { code: 429, message: "quota" };
const errorMsg = {
  kind: "error" as const,
  id: ID,
  error: ERROR,
  raw: { jsonrpc: "2.0", id: ID, error: ERROR },
};

/** The id's states. */
const views = {
  /** Never seen (or forgotten): no request waits, none was answered. */
  unknown: { id: ID, pending: null, turn: null, answeredBefore: false },
  /** A plain request (not a prompt) waits. */
  plain: { id: ID, pending: { answered: false }, turn: null, answeredBefore: false },
  /** A prompt waits; its turn runs. */
  prompt: { id: ID, pending: { answered: false }, turn: { silentMs: null }, answeredBefore: false },
  /** A prompt whose turn was sent a cancel after 9 s of silence; its grace runs. */
  cutShort: {
    id: ID,
    pending: { answered: false },
    turn: { silentMs: 9000 },
    answeredBefore: false,
  },
  /** turnguard answered the prompt (timeout, fail-fast); the agent's response is still due. */
  answeredByUs: { id: ID, pending: { answered: true }, turn: null, answeredBefore: false },
  /** The request was answered and no new one under the id waits. */
  answered: { id: ID, pending: null, turn: null, answeredBefore: true },
} satisfies Record<string, RequestView>;

const exitEvent: AnswerEvent = {
  kind: "exit",
  code: 3,
  signal: null,
  stderrTail: "boom",
  clientGone: false,
};
const exitEnd: TurnEnd = {
  kind: "exit",
  code: 3,
  signal: null,
  stderrTail: "boom",
  clientGone: false,
};
const crash = {
  jsonrpc: "2.0",
  id: ID,
  error: {
    code: -32603,
    message: "agent exited with status 3: boom",
    data: { turnguard: expect.objectContaining({ category: "crash", code: 3 }) },
  },
};
const silence = {
  jsonrpc: "2.0",
  id: ID,
  error: {
    code: -32603,
    // The same message the turn's end sends (concludeTurn's silenceCause), one for both.
    message: "turn timed out: the agent streamed nothing for 9s",
    data: { turnguard: expect.objectContaining({ category: "timeout" }) },
  },
};

const failFast: TurnEnd = { kind: "timeout", silentMs: 1000 };

const rows: [string, RequestView, AnswerEvent, Answer][] = [
  // The agent's response, read.
  ["an unknown id's response passes", views.unknown, { kind: "response", message: resultMsg }, {
    kind: "forward",
    settle: "keep",
  }],
  ["a plain request's response passes", views.plain, { kind: "response", message: errorMsg }, {
    kind: "forward",
    settle: "take",
  }],
  ["a prompt's result ends its turn", views.prompt, { kind: "response", message: resultMsg }, {
    kind: "end-turn",
    settle: "take",
    end: { kind: "result", result: RESULT, response: resultMsg.raw },
    agentLine: true,
    fallback: null,
  }],
  ["a prompt's error ends its turn", views.prompt, { kind: "response", message: errorMsg }, {
    kind: "end-turn",
    settle: "take",
    end: { kind: "error", error: ERROR, response: errorMsg.raw },
    agentLine: true,
    fallback: null,
  }],
  [
    "a turn cut short for silence ends as its timeout, whatever the agent answers",
    views.cutShort,
    { kind: "response", message: resultMsg },
    {
      kind: "end-turn",
      settle: "take",
      end: { kind: "timeout", silentMs: 9000 },
      agentLine: true,
      fallback: null,
    },
  ],
  [
    "a late response to a prompt turnguard answered is swallowed",
    views.answeredByUs,
    { kind: "response", message: resultMsg },
    {
      kind: "swallow",
      settle: "take",
      diagnostic: "dropped the agent's late response to request n7",
    },
  ],
  [
    "a second response to an answered id is swallowed",
    views.answered,
    { kind: "response", message: errorMsg },
    {
      kind: "swallow",
      settle: "keep",
      diagnostic: "dropped the agent's second response to request n7",
    },
  ],
  // Unread responses and batches stream through whole: never dropped.
  [
    "an unread response ends its turn unrewritten",
    views.prompt,
    { kind: "unread", isError: true, why: "too long" },
    {
      kind: "end-unread",
      settle: "take",
      end: {
        kind: "error",
        error: {
          code: null,
          message: "the agent's response was too long: forwarded unread, not rewritten",
        },
        response: {},
      },
      note: "the agent's response was too long: forwarded unread, not rewritten",
    },
  ],
  [
    "an unread late response passes, said",
    views.answeredByUs,
    { kind: "unread", isError: false, why: "too long" },
    {
      kind: "forward",
      settle: "take",
      diagnostic: "the agent's late response to request n7 was too long; it went through",
    },
  ],
  [
    "an unread second response passes, said",
    views.answered,
    { kind: "unread", isError: false, why: "nested too deeply" },
    {
      kind: "forward",
      settle: "keep",
      diagnostic:
        "the agent's second response to request n7 was nested too deeply; it went through",
    },
  ],
  ["a plain request answered in a batch", views.plain, { kind: "in-batch", message: resultMsg }, {
    kind: "forward",
    settle: "take",
  }],
  [
    "a prompt answered in a batch ends its turn unrewritten",
    views.prompt,
    { kind: "in-batch", message: resultMsg },
    {
      kind: "end-unread",
      settle: "take",
      end: { kind: "result", result: RESULT, response: resultMsg.raw },
      note: "the agent's response came in a batch: forwarded as it is, not rewritten",
    },
  ],
  // Silence: turnguard answers now; the agent's later answer is swallowed (mark).
  ["a silent turn's grace is over", views.cutShort, { kind: "silence", silentMs: 9000 }, {
    kind: "end-turn",
    settle: "mark",
    end: { kind: "timeout", silentMs: 9000 },
    agentLine: false,
    fallback: silence,
  }],
  ["silence after the agent answered: nothing", views.answered, {
    kind: "silence",
    silentMs: 9000,
  }, { kind: "none", settle: "keep" }],
  // Fail-fast: answer a prompt now.
  ["answer a prompt now", views.prompt, { kind: "now", end: failFast }, {
    kind: "end-turn",
    settle: "mark",
    end: failFast,
    agentLine: false,
    fallback: expect.objectContaining({ id: ID }),
  }],
  ["answer now a prompt already answered: nothing", views.answeredByUs, {
    kind: "now",
    end: failFast,
  }, { kind: "none", settle: "keep" }],
  ["answer now a request that is no prompt: nothing", views.plain, {
    kind: "now",
    end: failFast,
  }, { kind: "none", settle: "keep" }],
  // The end: every request still waiting gets one answer.
  ["the agent exited: a plain request gets the crash", views.plain, exitEvent, {
    kind: "send",
    settle: "take",
    response: crash,
  }],
  ["the agent exited: a prompt's turn ends as the exit", views.prompt, exitEvent, {
    kind: "end-turn",
    settle: "take",
    end: exitEnd,
    agentLine: false,
    fallback: crash,
  }],
  [
    "the agent exited: a prompt turnguard answered gets nothing more",
    views.answeredByUs,
    exitEvent,
    {
      kind: "none",
      settle: "take",
    },
  ],
  // Refused past the in-flight cap.
  ["a refused request is answered at once", views.unknown, { kind: "refused", message: "full" }, {
    kind: "send",
    settle: "keep",
    response: {
      jsonrpc: "2.0",
      id: ID,
      error: {
        code: -32603,
        message: "full",
        data: { turnguard: expect.objectContaining({ category: "capacity" }) },
      },
    },
  }],
];

describe("answer", () => {
  test.each(rows)("%s", (_name, view, event, expected) => {
    expect(answer(view, event)).toEqual(expected);
  });

  test("every id still waiting at the end is answered exactly once, then never again", () => {
    // Walk one request through its life: each event after the first answer is a no-op or a
    // swallow, never a second answer.
    const sends = (a: Answer) =>
      a.kind === "send" || a.kind === "end-turn" || a.kind === "end-unread" ||
      (a.kind === "forward" && a.settle !== "keep");
    const first = answer(views.prompt, { kind: "silence", silentMs: 9000 });
    expect(sends(first)).toBe(true);
    // After "mark": answered by turnguard.
    for (
      const e of [
        { kind: "response", message: resultMsg },
        exitEvent,
        { kind: "now", end: failFast },
      ] as AnswerEvent[]
    ) {
      expect(sends(answer(views.answeredByUs, e))).toBe(false);
    }
    // After "take": answered.
    for (
      const e of [
        { kind: "response", message: resultMsg },
        { kind: "silence", silentMs: 1 },
        exitEvent,
      ] as AnswerEvent[]
    ) {
      expect(sends(answer(views.answered, e))).toBe(false);
    }
  });
});

describe("fallbackResponse", () => {
  test("the agent's own response needs none", () => {
    expect(fallbackResponse(ID, { kind: "result", result: {}, response: {} })).toBeNull();
  });
});
