/**
 * The proxy's seams for later features: turn hooks see the turn's text, merged tool calls
 * and the prompt's `_meta`; the response waits for `beforeRespond`, whose patch lands in
 * the Outcome; a failing hook never loses the response. In-process proxy (runProxy) in
 * front of the real SDK fake agent; the client is raw JSON lines on PassThrough streams.
 * Also: several proxies appending to one outcome file.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { PassThrough } from "node:stream";
import { buildClassifier } from "../lib/cause/classifier.ts";
import type { Outcome } from "../lib/core/outcome.ts";
import { type ProxyOptions, runProxy } from "../lib/proxy/proxy.ts";
import type { TurnHooks } from "../lib/proxy/hooks.ts";
import type { Turn } from "../lib/proxy/turns.ts";
import {
  AGENT,
  BUN,
  fakeArgs,
  readOutcomes,
  scratch,
  startProxy,
  testEnv,
} from "./fixtures/acp/harness.ts";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(30_000);

/** A raw client on the proxy's streams: lines out, parsed lines in, in order. */
function rawClient() {
  const input = new PassThrough();
  const output = new PassThrough();
  const received: Array<{ at: number; message: Record<string, unknown> }> = [];
  let held = "";
  output.on("data", (c: Uint8Array) => {
    held += new TextDecoder().decode(c);
    for (let nl = held.indexOf("\n"); nl !== -1; nl = held.indexOf("\n")) {
      received.push({ at: Date.now(), message: JSON.parse(held.slice(0, nl)) });
      held = held.slice(nl + 1);
    }
  });
  const send = (m: unknown) => input.write(JSON.stringify(m) + "\n");
  const answer = async (id: number) => {
    while (!received.some((r) => r.message.id === id && r.message.method === undefined)) {
      await new Promise((r) => setTimeout(r, 5));
    }
    return received.find((r) => r.message.id === id && r.message.method === undefined)!;
  };
  return { input, output, received, send, answer };
}

function start(hooks: TurnHooks, extra: Partial<ProxyOptions> = {}) {
  const s = scratch();
  const client = rawClient();
  const outcomes: Outcome[] = [];
  const result = runProxy({
    command: BUN,
    args: [AGENT],
    profile: { name: "fake", match: [], logs: [], logFormat: "plain", anchors: null },
    classifier: buildClassifier([]),
    env: testEnv(s),
    input: client.input,
    output: client.output,
    stderr: new PassThrough(),
    onOutcome: (o) => outcomes.push(o),
    hooks,
    forwardSignals: false,
    ...extra,
  });
  return { client, outcomes, result };
}

async function openSession(client: ReturnType<typeof rawClient>) {
  client.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } });
  client.send({
    jsonrpc: "2.0",
    id: 1,
    method: "session/new",
    params: { cwd: "/tmp", mcpServers: [] },
  });
  await client.answer(1);
}

const promptOf = (id: number, text: string, meta?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method: "session/prompt",
  params: { sessionId: "sess-1", prompt: [{ type: "text", text }], _meta: meta },
});

describe("turn hooks", () => {
  test("see the turn and hold the response until beforeRespond settles", async () => {
    const seen: Record<string, unknown> = {};
    const events: string[] = [];
    let hookDoneAt = 0;
    const { client, outcomes, result } = start({
      turnStarted(turn) {
        events.push(`started ${turn.sessionId} ${turn.turn}`);
        seen.promptLine = new TextDecoder().decode(turn.promptLine);
      },
      async beforeRespond(turn: Turn, outcome: Outcome) {
        events.push(`before ${outcome.status}`);
        seen.text = turn.chars > 0 ? "done" : "";
        seen.calls = [...turn.toolCalls.values()];
        seen.meta = turn.promptMeta;
        await new Promise((r) => setTimeout(r, 300));
        hookDoneAt = Date.now();
        return { publish: { armed: true, detected: false, detector: null, fallback: null } };
      },
      turnEnded(outcome) {
        events.push(`ended ${outcome.status} ${outcome.publish?.armed}`);
      },
    });
    await openSession(client);
    const prompt = promptOf(2, "tools", { turnguard: { channel: "c1" } });
    client.send(prompt);
    const answer = await client.answer(2);
    expect(answer.message).toEqual({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn" } });
    expect(answer.at).toBeGreaterThanOrEqual(hookDoneAt);
    expect(events).toEqual(["started sess-1 1", "before ok", "ended ok true"]);
    expect(seen).toEqual({
      promptLine: JSON.stringify(prompt) + "\n",
      text: "done",
      calls: [{
        toolCallId: "t1",
        title: "Read file",
        kind: "read",
        status: "completed",
        rawOutput: { ok: true },
      }],
      meta: { turnguard: { channel: "c1" } },
    });
    client.input.end();
    expect(await result).toEqual({ exitCode: 0 });
    expect(outcomes.map((o) => [o.status, o.publish])).toEqual([[
      "ok",
      { armed: true, detected: false, detector: null, fallback: null },
    ]]);
  });

  test("a failing beforeRespond is a diagnostic; the response still goes out", async () => {
    const { client, outcomes, result } = start({
      beforeRespond() {
        return Promise.reject(new Error("publisher unreachable"));
      },
    });
    await openSession(client);
    client.send(promptOf(2, "echo hi"));
    expect((await client.answer(2)).message).toMatchObject({ result: { stopReason: "end_turn" } });
    client.input.end();
    await result;
    expect(outcomes[0].diagnostics).toEqual(["beforeRespond hook failed: publisher unreachable"]);
  });

  test("lines after a held response wait behind it", async () => {
    const { client, result } = start({
      beforeRespond: () => new Promise((r) => setTimeout(r, 300)),
    });
    await openSession(client);
    client.send(promptOf(2, "echo first"));
    // The agent answers the prompt at once; the proxy holds that answer in the hook while
    // the agent answers the next request.
    await new Promise((r) => setTimeout(r, 100));
    client.send({ jsonrpc: "2.0", id: 3, method: "_unknown/method", params: {} });
    await client.answer(3);
    client.input.end();
    await result;
    const ids = client.received.map((r) => r.message.id).filter((id) => id === 2 || id === 3);
    expect(ids).toEqual([2, 3]);
  });
});

describe("outcome file", () => {
  test("several proxies append whole lines to one file", async () => {
    const s = scratch();
    const proxies = [0, 1, 2].map(() => startProxy(s, fakeArgs(s)));
    await Promise.all(proxies.map(async (p) => {
      const lines = [
        { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } },
        { jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } },
        ...[2, 3, 4, 5].map((id) => promptOf(id, `chunks 50 ${"x".repeat(500)}`)),
      ];
      let out = "";
      p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
      for (const [i, l] of lines.entries()) {
        p.child.stdin!.write(JSON.stringify(l) + "\n");
        while (!out.includes(`"id":${i},`)) await new Promise((r) => setTimeout(r, 5));
      }
      p.child.stdin!.end();
      await p.exited;
    }));
    const outcomes = readOutcomes(s.outcomes);
    expect(outcomes.length).toBe(12);
    expect(new Set(outcomes.map((o) => o.reply.chars))).toEqual(new Set([25_000]));
  });
});

describe("--turn-timeout", () => {
  test("the error says how long the turn was really silent", async () => {
    let clock = 1_000_000;
    const { client, outcomes, result } = start({}, {
      now: () => clock,
      turnTimeoutMs: 100,
      graceMs: 50,
    });
    await openSession(client);
    client.send(promptOf(2, "silent"));
    while (outcomes.length === 0 && clock < 1_000_000 + 7000) {
      await new Promise((r) => setTimeout(r, 30));
      if (clock === 1_000_000) clock += 7000; // the turn has started by now (or soon)
    }
    const { message } = await client.answer(2);
    const text = "turn timed out: the agent streamed nothing for 7s";
    expect((message.error as { message: string }).message).toBe(text);
    client.input.end();
    await result;
    expect(outcomes.map((o) => o.error?.message)).toEqual([text]);
  });
});

describe("the client's input", () => {
  test("an error then the end close the agent's input once", async () => {
    const stderr = new PassThrough();
    let log = "";
    stderr.on("data", (c: Uint8Array) => log += new TextDecoder().decode(c));
    const { client, result } = start({}, { stderr, verbose: true });
    await openSession(client);
    client.input.emit("error", new Error("read failed"));
    client.input.end();
    await result;
    expect(log.split("\n").filter((l) => l.includes("the client closed its input"))).toEqual([
      "turnguard: the client closed its input; closed the agent's",
    ]);
  });
});
