/**
 * The byte budgets of the proxy's state: prompt copies (Turns.keepPrompt), requests in
 * flight (PendingRequests counts bytes), a turn's merged tool calls (ToolCallBudget).
 */
import { describe, expect, test } from "bun:test";
import { PendingRequests } from "../../../lib/acp/tracker.ts";
import { newTurn, Turns } from "../../../lib/proxy/turns.ts";
import { applyToolCallUpdate, ToolCallBudget } from "../../../lib/acp/tool_calls.ts";
import type { ToolCallState } from "../../../lib/plugin/api.ts";

const snapshot = { patterns: [], files: new Map(), takenAt: 0, diagnostics: [] };

describe("prompt copies", () => {
  test("kept within the budget, freed once, shared by a retry", () => {
    const turns = new Turns(100);
    const a = turns.keepPrompt(new Uint8Array(60));
    expect(a?.length).toBe(60);
    expect(turns.keepPrompt(new Uint8Array(60))).toBeNull();
    const turn = newTurn({
      sessionId: "s",
      requestId: 1,
      promptLine: a,
      promptMeta: undefined,
      startedAt: 0,
      snapshot,
      trackToolCalls: false,
    }, 1);
    const retry = turns.retry(turn, 1, 0, snapshot);
    expect(retry.promptLine).toBe(a);
    turns.releasePrompt(turn);
    turns.releasePrompt(retry);
    expect(turns.promptBytes).toBe(0);
    expect(turns.keepPrompt(new Uint8Array(100))?.length).toBe(100);
  });
});

describe("requests in flight", () => {
  test("full by bytes before full by number", () => {
    const p = new PendingRequests(1000, 10_000);
    let n = 0;
    while (!p.full) p.add("x".repeat(1000) + n++, "m", null);
    expect(n).toBeLessThan(10);
    expect(p.bytes).toBeGreaterThanOrEqual(10_000);
    while (p.size > 0) p.take(p.all()[0].id);
    expect(p.bytes).toBe(0);
    expect(p.full as boolean).toBe(false);
  });
});

describe("merged tool calls", () => {
  test("updates past the budget are dropped and counted; an update in place is charged its new size", () => {
    const calls = new Map<string, ToolCallState>();
    const budget = new ToolCallBudget(10_000);
    const update = (id: string, text: string) => ({
      sessionUpdate: "tool_call",
      toolCallId: id,
      title: text,
    });
    for (let i = 0; i < 100; i++) {
      applyToolCallUpdate(calls, update(`c${i}`, "t".repeat(1000)), budget);
    }
    expect(calls.size).toBeLessThan(10);
    expect(budget.dropped).toBe(100 - calls.size);
    expect(budget.total).toBeLessThanOrEqual(10_000);
    // Replacing a call's title with a shorter one frees room.
    applyToolCallUpdate(calls, update("c0", "short"), budget);
    expect(calls.get("c0")?.title).toBe("short");
    expect(budget.total).toBeLessThan(10_000 - 900);
  });
});
