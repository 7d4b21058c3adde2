/**
 * The proxy's turn end in a running proxy: the response waits for the publish step, which
 * sees the turn's text and the prompt's `_meta` and lands in the Outcome and the journal
 * before the client is answered; a failing publish never loses the response. In-process
 * proxy (runProxy) in front of the real SDK fake agent; the client is raw JSON lines on
 * PassThrough streams. Also: several proxies appending to one outcome file.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { PassThrough } from "node:stream";
import { buildClassifier } from "../../lib/cause/classifier.ts";
import type { Outcome } from "../../lib/core/outcome.ts";
import { type ProxyOptions, runProxy } from "../../lib/proxy/proxy.ts";
import type { TurnEndSteps } from "../../lib/proxy/turn_end.ts";
import type { FallbackRunner, FallbackSpec } from "../../lib/publish/fallback.ts";
import type { PublishContext } from "../../lib/publish/engine.ts";
import { publishSettings } from "../../lib/publish/settings.ts";
import { TurnRecorder } from "../../lib/retry/turn_recorder.ts";
import type { JournalRecord } from "../../lib/journal/records.ts";
import {
  AGENT,
  BUN,
  fakeArgs,
  readOutcomes,
  scratch,
  startProxy,
  testEnv,
} from "../fixtures/acp/harness.ts";

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

function start(turnEnd: TurnEndSteps, extra: Partial<ProxyOptions> = {}) {
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
    turnEnd: { ...turnEnd, onOutcome: (o) => outcomes.push(o) },
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

/** The publish fallback armed, with `run` in place of the fallback command. */
function publishing(run: FallbackRunner): PublishContext {
  const vars = new Map([["channel", "c0"], ["reply_to", "r0"]]);
  return { settings: publishSettings(undefined, true), detectors: [], vars, run };
}

const sent = { sent: true, exitCode: 0, signal: null, timedOut: false, stderr: "" };

describe("the turn's end in a running proxy", () => {
  test("the response waits for the publish, which is recorded before it", async () => {
    const specs: FallbackSpec[] = [];
    let publishedAt = 0;
    const records: JournalRecord[] = [];
    const recorder = new TurnRecorder({
      journal: { append: (r) => void records.push(r) },
      name: "n",
      policy: { retries: 0, maxWaitMs: 1000 },
    });
    const { client, outcomes, result } = start({
      recorder,
      publish: publishing(async (spec) => {
        specs.push(spec);
        await new Promise((r) => setTimeout(r, 300));
        publishedAt = Date.now();
        return sent;
      }),
    });
    await openSession(client);
    // What the journal holds when the answer reaches the client.
    let journaled: string[] = [];
    client.output.on("data", (c: Uint8Array) => {
      if (new TextDecoder().decode(c).includes('"id":2,')) journaled = records.map((r) => r.event);
    });
    const prompt = promptOf(2, "echo the answer", { turnguard: { channel: "c1", reply_to: "r1" } });
    client.send(prompt);
    const answer = await client.answer(2);
    expect(answer.message).toEqual({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn" } });
    expect(answer.at).toBeGreaterThanOrEqual(publishedAt);
    expect(journaled).toEqual(["turn_started", "turn_ended"]);
    expect(specs.map((s) => [s.argv.slice(0, 4), s.stdin])).toEqual([[
      ["buzz", "messages", "send", "--channel"],
      "the answer",
    ]]);
    expect(specs[0].argv[4]).toBe("c1");
    client.input.end();
    expect(await result).toEqual({ exitCode: 0 });
    const publish = { armed: true, detected: false, detector: null, channel: "c1" };
    expect(outcomes.map((o) => [o.status, o.publish])).toEqual([[
      "ok",
      { ...publish, fallback: { sent: true, exitCode: 0 } },
    ]]);
    const ended = records[1];
    expect(ended.event === "turn_ended" && ended.outcome.publish).toEqual(outcomes[0].publish);
  });

  test("a failing publish is a diagnostic; the response still goes out", async () => {
    const { client, outcomes, result } = start({
      publish: publishing(() => Promise.reject(new Error("publisher unreachable"))),
    });
    await openSession(client);
    client.send(promptOf(2, "echo hi"));
    expect((await client.answer(2)).message).toMatchObject({ result: { stopReason: "end_turn" } });
    client.input.end();
    await result;
    expect(outcomes[0].diagnostics.join("\n")).toContain("publisher unreachable");
  });

  test("lines after a held response wait behind it", async () => {
    const { client, result } = start({
      publish: publishing(() => new Promise((r) => setTimeout(() => r(sent), 300))),
    });
    await openSession(client);
    client.send(promptOf(2, "echo first"));
    // The agent answers the prompt at once; the proxy holds that answer while it publishes
    // and the agent answers the next request.
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
