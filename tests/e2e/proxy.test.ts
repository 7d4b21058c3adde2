/**
 * `turnguard proxy` end to end: the ACP SDK's client talks through the proxy (a real
 * child process) to the SDK fake agent (another real child process).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  fakeArgs,
  killedAfterEach,
  openSession,
  prompt,
  type ProxyProcess,
  readOutcomes,
  rejection,
  type Scratch,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(30_000);

const track = killedAfterEach();

function proxy(s: Scratch, extra: string[] = []): ProxyProcess {
  const p = startProxy(s, fakeArgs(s, extra));
  track(p);
  return p;
}

describe("pass-through and turn tracking", () => {
  test("a streamed answer reaches the client unchanged and the outcome is ok", async () => {
    const s = scratch();
    const p = proxy(s);
    const { response, updates } = await withClient(p, async (ctx, updates) => {
      const sessionId = await openSession(ctx);
      const response = await prompt(ctx, sessionId, "chunks 3 héllo wörld");
      return { response, updates };
    });
    expect(response).toEqual({ stopReason: "end_turn" });
    expect(updates.map((u) => u.update)).toEqual(
      Array(3).fill({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: "héllo wörld" },
      }),
    );
    expect(await p.exited).toEqual({ code: 0, signal: null });
    const [o] = readOutcomes(s.outcomes);
    expect(o).toMatchObject({
      v: 1,
      mode: "proxy",
      agent: "fake",
      session: "sess-1",
      turn: 1,
      status: "ok",
      stopReason: "end_turn",
      exit: null,
      error: null,
      retry: null,
      reply: { chars: 33, text: "héllo wörldhéllo wörldhéllo wörld" },
      publish: null,
    });
    expect(p.stderr()).toBe("");
  });

  test("turn numbers count per session", async () => {
    const s = scratch();
    const p = proxy(s);
    await withClient(p, async (ctx) => {
      const a = await openSession(ctx);
      const b = (await ctx.request("session/new", { cwd: "/tmp", mcpServers: [] })).sessionId;
      await prompt(ctx, a, "echo one");
      await prompt(ctx, a, "echo two");
      await prompt(ctx, b, "echo three");
    });
    await p.exited;
    expect(readOutcomes(s.outcomes).map((o) => [o.session, o.turn, o.reply.text])).toEqual([
      ["sess-1", 1, "one"],
      ["sess-1", 2, "two"],
      ["sess-2", 1, "three"],
    ]);
  });

  test("concurrent sessions keep their own state", async () => {
    const s = scratch();
    const p = proxy(s);
    const answers = await withClient(p, async (ctx) => {
      const a = await openSession(ctx);
      const b = (await ctx.request("session/new", { cwd: "/tmp", mcpServers: [] })).sessionId;
      const c = (await ctx.request("session/new", { cwd: "/tmp", mcpServers: [] })).sessionId;
      return await Promise.all([
        prompt(ctx, a, "slow 300 alpha"),
        prompt(ctx, b, "empty"),
        prompt(ctx, c, "slow 100 gamma"),
      ]);
    });
    expect(answers).toEqual([
      { stopReason: "end_turn" },
      { stopReason: "end_turn" },
      { stopReason: "end_turn" },
    ]);
    await p.exited;
    const bySession = Object.fromEntries(
      readOutcomes(s.outcomes).map((o) => [o.session, [o.status, o.reply.text]]),
    );
    expect(bySession).toEqual({
      "sess-1": ["ok", "alpha"],
      "sess-2": ["empty", ""],
      "sess-3": ["ok", "gamma"],
    });
  });

  test("tool calls count as streamed output", async () => {
    const s = scratch();
    const p = proxy(s);
    await withClient(p, async (ctx) => {
      await prompt(ctx, await openSession(ctx), "tools");
    });
    await p.exited;
    expect(readOutcomes(s.outcomes)[0]).toMatchObject({
      status: "ok",
      reply: { chars: 4, text: "done" },
    });
  });

  test("a permission request round trip passes through", async () => {
    const s = scratch();
    const p = proxy(s);
    const updates = await withClient(p, async (ctx, updates) => {
      await prompt(ctx, await openSession(ctx), "permission");
      return updates;
    });
    expect(updates.at(-1)?.update).toEqual({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "permission selected" },
    });
  });
});

describe("lines longer than the inspection limit", () => {
  test("pass unread and still count as streamed output", async () => {
    const s = scratch();
    const p = proxy(s, ["--max-line-bytes", "1000"]);
    const { response, updates } = await withClient(p, async (ctx, updates) => {
      const response = await prompt(ctx, await openSession(ctx), "long-and-log 5000");
      return { response, updates };
    });
    expect(response).toEqual({ stopReason: "end_turn" });
    expect(updates.map((u) => u.update)).toEqual([
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "z".repeat(5000) } },
    ]);
    await p.exited;
    const [o] = readOutcomes(s.outcomes);
    expect([o.status, o.error, o.reply]).toEqual(["ok", null, { chars: 0, text: "" }]);
    expect(o.diagnostics).toEqual([
      "1 agent line(s) longer than the inspection limit passed through unread; reply.chars does not count their text",
    ]);
  });
});

describe("end_turn with nothing streamed", () => {
  test("a cause in the turn's log is surfaced as a -32603 error", async () => {
    const s = scratch();
    const p = proxy(s);
    const err = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await rejection(prompt(ctx, sessionId, "log-quota"));
    });
    const cause =
      "agent executor error: RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 40h52m46s.";
    expect(err.code).toBe(-32603);
    expect(err.message).toBe(cause);
    const data = err.data as { turnguard: Record<string, unknown> };
    expect(data.turnguard).toMatchObject({
      status: "failed",
      category: "quota",
      message: cause,
      code: 429,
      anchor: "fake.executor",
      stopReason: "end_turn",
      source: { path: s.log, offset: 0 },
    });
    expect(data.turnguard.retry).toMatchObject({
      retryable: true,
      reason: "quota: retry in 40h52m",
      afterMs: (40 * 3600 + 52 * 60 + 46) * 1000,
    });
    await p.exited;
    const [o] = readOutcomes(s.outcomes);
    expect(o).toMatchObject({
      status: "failed",
      stopReason: "end_turn",
      error: { code: 429, message: cause, category: "quota", anchor: "fake.executor" },
      reply: { chars: 0, text: "" },
    });
  });

  test("with no cause in the log it stays an honest empty end_turn", async () => {
    const s = scratch();
    const p = proxy(s);
    const response = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await prompt(ctx, sessionId, "log-noise");
    });
    expect(response).toEqual({ stopReason: "end_turn" });
    await p.exited;
    expect(readOutcomes(s.outcomes)[0]).toMatchObject({ status: "empty", error: null });
  });

  test("a cause logged before the turn started is not this turn's", async () => {
    const s = scratch();
    const p = proxy(s);
    const responses = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      await rejection(prompt(ctx, sessionId, "log-quota"));
      return await prompt(ctx, sessionId, "empty");
    });
    expect(responses).toEqual({ stopReason: "end_turn" });
    await p.exited;
    expect(readOutcomes(s.outcomes).map((o) => o.status)).toEqual(["failed", "empty"]);
  });
});

describe("agent errors", () => {
  test("an HTTP status as code with provider JSON: annotated, passed through", async () => {
    const s = scratch();
    const p = proxy(s);
    const err = await withClient(p, async (ctx) => {
      return await rejection(prompt(ctx, await openSession(ctx), "error-gemini"));
    });
    expect(err.code).toBe(429);
    expect(JSON.parse(err.message)).toMatchObject({
      error: { code: 429, status: "RESOURCE_EXHAUSTED" },
    });
    expect((err.data as { turnguard: unknown }).turnguard).toMatchObject({
      status: "failed",
      category: "quota",
      message: "Quota exceeded for quota metric 'Generate Content API requests per minute'",
      code: 429,
      anchor: "fake.quota",
      retry: { retryable: true, reason: "quota: retry in 37s", afterMs: 37000 },
    });
    await p.exited;
    expect(readOutcomes(s.outcomes)[0]).toMatchObject({
      status: "failed",
      stopReason: null,
      error: {
        code: 429,
        category: "quota",
        message: "Quota exceeded for quota metric 'Generate Content API requests per minute'",
      },
    });
  });

  test("--rewrite-errors: -32603 and the readable message, originals kept", async () => {
    const s = scratch();
    const p = proxy(s, ["--rewrite-errors"]);
    const err = await withClient(p, async (ctx) => {
      return await rejection(prompt(ctx, await openSession(ctx), "error-503"));
    });
    expect(err.code).toBe(-32603);
    expect(err.message).toBe("The model is overloaded.");
    expect((err.data as { turnguard: unknown }).turnguard).toMatchObject({
      category: "capacity",
      code: 503,
      originalCode: 503,
      originalMessage:
        '{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}',
    });
  });

  test("object data keeps its members and gains turnguard", async () => {
    const s = scratch();
    const p = proxy(s);
    const err = await withClient(p, async (ctx) => {
      return await rejection(prompt(ctx, await openSession(ctx), "error-kind"));
    });
    expect(err.code).toBe(-32603);
    expect(err.message).toBe("Internal error");
    expect(err.data).toMatchObject({
      errorKind: "rate_limit",
      message: "Rate limit reached for requests",
      turnguard: { category: "rate_limit", message: "Rate limit reached for requests" },
    });
  });

  test("data that is not an object is left alone", async () => {
    const s = scratch();
    const p = proxy(s);
    const err = await withClient(p, async (ctx) => {
      return await rejection(prompt(ctx, await openSession(ctx), "error-string-data"));
    });
    expect([err.code, err.message, err.data]).toEqual([
      -32603,
      "429 Too Many Requests",
      "see upstream",
    ]);
    await p.exited;
    expect(readOutcomes(s.outcomes)[0].error).toMatchObject({
      category: "rate_limit",
      message: "429 Too Many Requests",
    });
  });
});

describe("stop reasons are their own outcomes", () => {
  for (
    const [reason, status] of [
      ["max_tokens", "truncated"],
      ["max_turn_requests", "truncated"],
      ["refusal", "refused"],
    ] as const
  ) {
    test(`${reason} → ${status}, response unchanged`, async () => {
      const s = scratch();
      const p = proxy(s);
      const response = await withClient(p, async (ctx) => {
        return await prompt(ctx, await openSession(ctx), `stop ${reason}`);
      });
      expect(response).toEqual({ stopReason: reason });
      await p.exited;
      expect(readOutcomes(s.outcomes)[0]).toMatchObject({
        status,
        stopReason: reason,
        error: null,
        reply: { chars: 7, text: "partial" },
      });
    });
  }

  test("session/cancel → cancelled", async () => {
    const s = scratch();
    const p = proxy(s);
    const response = await withClient(p, async (ctx, updates) => {
      const sessionId = await openSession(ctx);
      const pending = prompt(ctx, sessionId, "cancellable");
      while (updates.length === 0) await new Promise((r) => setTimeout(r, 10));
      await ctx.notify("session/cancel", { sessionId });
      return await pending;
    });
    expect(response).toEqual({ stopReason: "cancelled" });
    await p.exited;
    expect(readOutcomes(s.outcomes)[0]).toMatchObject({
      status: "cancelled",
      stopReason: "cancelled",
      reply: { chars: 7, text: "working" },
    });
  });
});

describe("failure reported only as a short message", () => {
  test("a clean turn stays ok with no error; the notice is a diagnostic", async () => {
    const s = scratch();
    const p = proxy(s);
    const response = await withClient(p, async (ctx) => {
      return await prompt(
        ctx,
        await openSession(ctx),
        "echo You've hit your usage limit. Try again in 3 hours.",
      );
    });
    expect(response).toEqual({ stopReason: "end_turn" });
    await p.exited;
    const [o] = readOutcomes(s.outcomes);
    expect(o).toMatchObject({ status: "ok", error: null, retry: null });
    expect(o.diagnostics).toContain(
      "the agent's reply reads as a quota failure (anchor fake.quota); the turn ended normally, so it stays ok",
    );
  });
});
