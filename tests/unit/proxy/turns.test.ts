/**
 * Turn state (lib/proxy/turns.ts): what a running turn keeps of its updates, per session.
 */
import { describe, expect, test } from "bun:test";
import { peekUpdate, type UpdatePeek } from "../../../lib/acp/peek.ts";
import {
  observeUpdate,
  observeUpdateLine,
  streamed,
  Turns,
  turnText,
} from "../../../lib/proxy/turns.ts";
import { enc, snapshot, testTurn as turn } from "../../helpers/units.ts";

const fakePeek = (kind: string): UpdatePeek => ({
  lineStart: 0,
  lineEnd: 2,
  idStart: 0,
  idEnd: 0,
  kind,
  end: 0,
});

describe("turn state", () => {
  test("message chunks are counted and kept, other output counts as activity", () => {
    const t = turn();
    const updates = [
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "héllo " } },
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "wörld" } },
      { sessionUpdate: "agent_message_chunk", content: { type: "image", data: "..." } },
      { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } },
      { sessionUpdate: "plan", entries: [] },
      { sessionUpdate: "usage_update", used: 1 },
      { sessionUpdate: "available_commands_update", availableCommands: [] },
      { sessionUpdate: "some_future_kind" },
      { noKind: true },
      "not an object",
    ];
    updates.forEach((u, i) => observeUpdate(t, u, 2000 + i));
    expect([t.chars, t.activity, turnText(t), streamed(t)]).toEqual([11, 3, "héllo wörld", 14]);
    expect(t.lastActivityAt).toBe(2007);
  });

  test("tool calls are joined by toolCallId, parsed or peeked, in order", () => {
    const t = turn();
    const line = (update: unknown) =>
      enc(
        JSON.stringify({
          jsonrpc: "2.0",
          method: "session/update",
          params: { sessionId: "s1", update },
        }) + "\n",
      );
    const first = {
      sessionUpdate: "tool_call",
      toolCallId: "a",
      title: "Read",
      status: "pending",
      rawInput: { p: 1 },
    };
    const feed = (update: unknown, now: number) => {
      const l = line(update);
      observeUpdateLine(t, peekUpdate(l)!, l, now);
    };
    feed(first, 1);
    observeUpdate(t, { sessionUpdate: "tool_call", toolCallId: "b", title: "Other" }, 2);
    feed({
      sessionUpdate: "tool_call_update",
      toolCallId: "a",
      status: "completed",
      rawOutput: "ok",
    }, 3);
    expect(t.pendingToolLines.length).toBe(1);
    expect([...t.toolCalls.values()]).toEqual([
      { toolCallId: "a", title: "Read", status: "completed", rawInput: { p: 1 }, rawOutput: "ok" },
      { toolCallId: "b", title: "Other" },
    ]);
    expect([t.pendingToolLines.length, t.activity, t.lastActivityAt]).toEqual([0, 3, 3]);
  });

  test("without a reader, tool calls are only counted", () => {
    const t = new Turns().start({
      sessionId: "s",
      requestId: 1,
      promptLine: enc(""),
      promptMeta: null,
      startedAt: 0,
      snapshot,
      trackToolCalls: false,
    });
    observeUpdate(t, { sessionUpdate: "tool_call", toolCallId: "a" }, 1);
    observeUpdateLine(t, fakePeek("tool_call_update"), enc("{}"), 2);
    expect([t.activity, t.pendingToolLines.length, t.toolCalls.size]).toEqual([2, 0, 0]);
  });

  test("peeked message chunks are read for their text", () => {
    const t = turn();
    const chunk = enc(
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hé"}}}}\n',
    );
    observeUpdateLine(t, peekUpdate(chunk)!, chunk, 5);
    observeUpdateLine(t, fakePeek("usage_update"), enc("{}"), 6);
    observeUpdateLine(t, fakePeek("plan"), enc("{}"), 7);
    expect([t.chars, turnText(t), t.activity, t.lastActivityAt]).toEqual([2, "hé", 1, 7]);
  });

  test("kept text is capped at 64 KiB of UTF-8, cut on a character; chars count everything", () => {
    const t = turn();
    for (let i = 0; i < 30_000; i++) {
      observeUpdate(t, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: "é€" },
      }, 0);
    }
    const text = turnText(t);
    expect(t.chars).toBe(60_000);
    expect(new TextEncoder().encode(text).length).toBe(65_535);
    expect(text.endsWith("é€")).toBe(true);
  });

  test("sessions never mix; overlapping prompts route updates to the newest", () => {
    const turns = new Turns();
    const base = {
      promptLine: enc(""),
      promptMeta: undefined,
      startedAt: 0,
      snapshot,
      trackToolCalls: true,
    };
    const a = turns.start({ ...base, sessionId: "a", requestId: 1 });
    const b = turns.start({ ...base, sessionId: "b", requestId: "1" });
    expect([turns.forSession("a"), turns.forSession("b"), turns.forRequest("1")]).toEqual([
      a,
      b,
      b,
    ]);
    const a2 = turns.start({ ...base, sessionId: "a", requestId: 2 });
    expect([a2.turn, turns.forSession("a") === a2, turns.size]).toEqual([2, true, 3]);
    turns.end(a);
    expect([turns.forSession("a") === a2, turns.size]).toEqual([true, 2]);
  });
});
