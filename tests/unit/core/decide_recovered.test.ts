/**
 * decide's rows for a lost reply (`recovered`): the agent ended the turn as whole, its
 * records hold the final answer whole, and the client did not receive it (none of it, or a
 * strict beginning of it: `unsentReply`). Delivered with `--recover-replies`, the turn is ok;
 * not delivered, it reads as the wire left it and says the answer is `reply.recovered`.
 */
import { describe, expect, test } from "bun:test";
import { type Cause, decide, type RecordFacts, type TurnFacts } from "../../../lib/core/decide.ts";
import type { Status } from "../../../lib/core/outcome.ts";

const cause = (message: string, category: Cause["error"]["category"] = "unknown"): Cause => ({
  error: { code: null, message, category, anchor: "records:x", source: null },
  retry: { retryable: false, reason: "r", afterMs: null, at: null },
});
const SHORT = cause("the client received 12 of the 41 characters of the final answer");
const ERROR = cause("API Error: 529 Overloaded", "capacity");

const records = (over: Partial<RecordFacts> = {}): RecordFacts => ({
  error: null,
  aborted: null,
  stop: null,
  dropped: null,
  unanswered: null,
  final: true,
  ...over,
});

const base: TurnFacts = {
  cancelled: false,
  exit: null,
  stopReason: "end_turn",
  agentError: null,
  output: 0,
  logCause: null,
  timeout: null,
};

type Row = {
  name: string;
  facts: Partial<TurnFacts>;
  want: { status: Status; recovered: boolean; error: string | null };
};

const rows: Row[] = [
  {
    name: "a strict beginning streamed, the answer recorded: truncated, the answer recovered",
    facts: { output: 12, replyChars: 12, records: records(), shortfall: SHORT, unsentReply: true },
    want: { status: "truncated", recovered: true, error: SHORT.error.message },
  },
  {
    name: "the same, delivered (--recover-replies): ok",
    facts: {
      output: 12,
      replyChars: 12,
      records: records(),
      shortfall: SHORT,
      unsentReply: true,
      recoverReplies: true,
    },
    want: { status: "ok", recovered: true, error: null },
  },
  {
    name: "nothing streamed, the answer recorded: empty, the answer recovered",
    facts: { records: records(), unsentReply: true },
    want: { status: "empty", recovered: true, error: null },
  },
  {
    name: "nothing streamed, delivered: ok",
    facts: { records: records(), unsentReply: true, recoverReplies: true },
    want: { status: "ok", recovered: true, error: null },
  },
  {
    name: "the client received the answer: nothing to recover",
    facts: { output: 41, replyChars: 41, records: records(), recoverReplies: true },
    want: { status: "ok", recovered: false, error: null },
  },
  {
    name: "the records end on an error after the answer: no answer to recover",
    facts: {
      output: 12,
      replyChars: 12,
      records: records({ error: ERROR, final: false }),
      unsentReply: true,
      recoverReplies: true,
    },
    want: { status: "truncated", recovered: false, error: ERROR.error.message },
  },
  {
    name: "no records read: nothing to recover",
    facts: { unsentReply: true, recoverReplies: true },
    want: { status: "empty", recovered: false, error: null },
  },
  {
    name: "the agent answered with an error: its error stands",
    facts: {
      stopReason: null,
      agentError: ERROR,
      records: records(),
      unsentReply: true,
      recoverReplies: true,
    },
    want: { status: "failed", recovered: false, error: ERROR.error.message },
  },
  {
    name: "the turn was cancelled: nothing to recover",
    facts: { cancelled: true, records: records(), unsentReply: true, recoverReplies: true },
    want: { status: "cancelled", recovered: false, error: null },
  },
];

describe("decide — a reply the client did not receive", () => {
  for (const { name, facts, want } of rows) {
    test(name, () => {
      const d = decide({ ...base, ...facts });
      expect({ status: d.status, recovered: d.recovered === true, error: d.error?.message ?? null })
        .toEqual(want);
      if (want.recovered) expect(d.notes?.join("\n")).toContain("did not receive");
    });
  }
});
