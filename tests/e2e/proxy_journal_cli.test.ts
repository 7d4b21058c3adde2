/**
 * `turnguard proxy --journal ... --retries N` through the real CLI: the fake SDK agent
 * behind `bun main.ts proxy`, a raw JSON-RPC client on the proxy's stdio (so every byte the
 * client gets is counted), `turnguard wait` / `turnguard retry` as real processes.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readJournal } from "../../lib/journal/reader.ts";
import {
  fakeArgs,
  killedAfterEach,
  type ProxyProcess,
  readOutcomes,
  type Scratch,
  scratch,
  startProxy,
} from "../fixtures/acp/harness.ts";
import { turnguard } from "../helpers/cli.ts";
import { join } from "node:path";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(40_000);

const track = killedAfterEach();

type Message = Record<string, unknown> & { id?: number; method?: string };

/** A raw JSON-RPC client on a proxy process: every message it got, in order. */
function rawClient(p: ProxyProcess) {
  const got: Message[] = [];
  const listeners = new Set<() => void>();
  let buffered = "";
  let next = 0;
  p.child.stdout!.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let nl = buffered.indexOf("\n"); nl !== -1; nl = buffered.indexOf("\n")) {
      got.push(JSON.parse(buffered.slice(0, nl)));
      buffered = buffered.slice(nl + 1);
    }
    for (const f of listeners) f();
  });
  const send = (message: unknown) => p.child.stdin!.write(JSON.stringify(message) + "\n");
  const until = <T>(find: () => T | undefined): Promise<T> =>
    new Promise((resolve) => {
      const check = () => {
        const found = find();
        if (found === undefined) return;
        listeners.delete(check);
        resolve(found);
      };
      listeners.add(check);
      check();
    });
  const responsesTo = (id: number) => got.filter((m) => m.id === id && m.method === undefined);
  const request = (method: string, params: unknown) => {
    const id = next++;
    send({ jsonrpc: "2.0", id, method, params });
    return { id, response: until(() => responsesTo(id)[0]) };
  };
  return {
    got,
    send,
    request,
    responsesTo,
    /** initialize + session/new; the session id. */
    async open(): Promise<string> {
      await request("initialize", { protocolVersion: 1, clientCapabilities: {} }).response;
      const session = await request("session/new", { cwd: "/tmp", mcpServers: [] }).response;
      return (session.result as { sessionId: string }).sessionId;
    },
    prompt(sessionId: string, text: string) {
      return request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
    },
    /** Message text the client was streamed. */
    text(): string {
      return got.filter((m) => m.method === "session/update").map((m) => {
        const update = (m.params as { update: { content?: { text?: string } } }).update;
        return update.content?.text ?? "";
      }).join("");
    },
  };
}

function journalOf(s: Scratch): string {
  return join(s.dir, "journal.jsonl");
}

function proxy(s: Scratch, extra: string[]): ProxyProcess {
  const p = startProxy(s, fakeArgs(s, ["--journal", journalOf(s), "--name", "ide", ...extra]));
  track(p);
  return p;
}

/** The journal's events, `turn event attempt`. */
function events(s: Scratch): string[] {
  return readJournal(journalOf(s)).records.map((r) =>
    `${r.turn} ${r.event}${"attempt" in r ? ` ${r.attempt}` : ""}`
  );
}

/** Waits until the journal has a record of `event`. */
async function journaled(s: Scratch, event: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (readJournal(journalOf(s)).records.some((r) => r.event === event)) return;
    await Bun.sleep(50);
  }
  throw new Error(`no ${event} in the journal`);
}

describe("the proxy journals its turns", () => {
  test("wait --print prints the turn's reply", async () => {
    const s = scratch();
    const p = proxy(s, []);
    const c = rawClient(p);
    const sessionId = await c.open();
    const { response } = c.prompt(sessionId, "echo the answer");
    expect((await response).result).toEqual({ stopReason: "end_turn" });
    const r = await turnguard(["wait", "--print", "--journal", journalOf(s)]);
    expect([r.stdout, r.code]).toEqual(["the answer\n", 0]);
    p.child.stdin!.end();
    expect(await p.exited).toEqual({ code: 0, signal: null });
    const records = readJournal(journalOf(s)).records;
    expect(records.map((r) => [r.name, r.session, r.turn, r.event])).toEqual([
      ["ide", sessionId, 1, "turn_started"],
      ["ide", sessionId, 1, "turn_ended"],
    ]);
    expect(records[0]).toMatchObject({ mode: "proxy", agent: "fake", promptId: 2 });
  });

  test("the classic bug: turn 2 fails with a 503 and streams nothing", async () => {
    const s = scratch();
    const p = proxy(s, []);
    const c = rawClient(p);
    const sessionId = await c.open();
    expect((await c.prompt(sessionId, "echo the answer before").response).result).toEqual({
      stopReason: "end_turn",
    });
    const failed = await c.prompt(sessionId, "flaky 1 log never").response;
    expect((failed.error as { message: string }).message).toBe(
      "agent executor error: UNAVAILABLE (code 503): The model is overloaded. Please retry in 0.2s.",
    );
    p.child.stdin!.end();
    await p.exited;
    const r = await turnguard(["wait", "--print", "--journal", journalOf(s)]);
    expect(r.stdout).not.toContain("the answer before");
    expect([r.stdout, r.code]).toEqual([
      "ide  ready: turn failed\n" +
      "error: agent executor error: UNAVAILABLE (code 503): The model is overloaded. Please retry in 0.2s.\n" +
      "no retry waits (retries are off)\n",
      1,
    ]);
  });

  test("without a journal flag the turn goes to the default journal", async () => {
    const s = scratch();
    const p = startProxy(s, ["--config", s.config, "--agent", "fake"], undefined, {
      XDG_STATE_HOME: join(s.dir, "state"),
    });
    track(p);
    const c = rawClient(p);
    const sessionId = await c.open();
    await c.prompt(sessionId, "echo hi").response;
    p.child.stdin!.end();
    await p.exited;
    const { records } = readJournal(join(s.dir, "state", "turnguard", "journal.jsonl"));
    expect(records.map((r) => r.event)).toEqual(["turn_started", "turn_ended"]);
  });
});

describe("a later proxy that serves a session id an earlier one used", () => {
  /** A first proxy answers two turns of `sess-1`, then exits. */
  async function earlierProxy(s: Scratch): Promise<string> {
    const p = proxy(s, []);
    const c = rawClient(p);
    const sessionId = await c.open();
    await c.prompt(sessionId, "echo the first answer").response;
    await c.prompt(sessionId, "echo the earlier answer").response;
    p.child.stdin!.end();
    await p.exited;
    return sessionId;
  }

  test("wait never shows the earlier proxy's reply while the new turn runs", async () => {
    const s = scratch();
    const sessionId = await earlierProxy(s);
    const p = proxy(s, []);
    const c = rawClient(p);
    // The fake agent numbers its sessions per process: the new one is `sess-1` again.
    expect(await c.open()).toBe(sessionId);
    c.prompt(sessionId, "slow 30000 the new answer");
    for (let i = 0; i < 400; i++) {
      if (
        readJournal(journalOf(s)).records.filter((r) => r.event === "turn_started").length === 3
      ) {
        break;
      }
      await Bun.sleep(50);
    }
    const r = await turnguard([
      "wait",
      "ide",
      "--print",
      "--timeout",
      "0.5",
      "--journal",
      journalOf(s),
    ]);
    expect(r.stdout).not.toContain("the earlier answer");
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("ide turn 1 (session sess-1) has not finished");
  });

  test("wait reports the new turn's failure, and log lists the turns as they happened", async () => {
    const s = scratch();
    const sessionId = await earlierProxy(s);
    const p = proxy(s, []);
    const c = rawClient(p);
    expect(await c.open()).toBe(sessionId);
    expect((await c.prompt(sessionId, "flaky 1 log never").response).error).toMatchObject({
      code: -32603,
    });
    p.child.stdin!.end();
    await p.exited;
    const r = await turnguard(["wait", "ide", "--print", "--journal", journalOf(s)]);
    expect(r.stdout).not.toContain("the earlier answer");
    expect(r.stdout).toStartWith("ide  ready: turn failed\n");
    expect(r.code).toBe(1);
    const log = await turnguard(["log", "ide", "--json", "--journal", journalOf(s)]);
    const rows = log.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(rows.map((row) => [row.turn, row.status])).toEqual([[1, "ok"], [2, "ok"], [
      1,
      "failed",
    ]]);
  });
});

describe("proxy retries", () => {
  for (const kind of ["error", "log"]) {
    test(`two capacity failures (${kind}), then the answer: one response, the success`, async () => {
      const s = scratch();
      const p = proxy(s, ["--retries", "3"]);
      const c = rawClient(p);
      const sessionId = await c.open();
      const { id, response } = c.prompt(sessionId, `flaky 2 ${kind} the answer`);
      expect((await response).result).toEqual({ stopReason: "end_turn" });
      p.child.stdin!.end();
      await p.exited;
      expect(c.responsesTo(id).length).toBe(1);
      expect(c.text()).toBe("the answer");
      expect(events(s)).toEqual([
        "1 turn_started",
        "1 retry_scheduled 1",
        "1 turn_ended 0",
        "1 retry_started 1",
        "1 retry_scheduled 2",
        "1 turn_ended 1",
        "1 retry_started 2",
        "1 retry_settled 2",
        "1 turn_ended 2",
      ]);
      // The outcome file has the turn's one Outcome: the last attempt's.
      expect(readOutcomes(s.outcomes).map((o) => [o.turn, o.status, o.reply.text])).toEqual([
        [1, "ok", "the answer"],
      ]);
      const r = await turnguard(["wait", "--print", "--journal", journalOf(s)]);
      expect([r.stdout, r.code]).toEqual(["the answer\n", 0]);
    });
  }

  test("retries exhausted: the client gets the last failure", async () => {
    const s = scratch();
    const p = proxy(s, ["--retries", "1"]);
    const c = rawClient(p);
    const sessionId = await c.open();
    const { id, response } = c.prompt(sessionId, "flaky 5 error never");
    expect((await response).error).toMatchObject({ code: 503 });
    p.child.stdin!.end();
    await p.exited;
    expect(c.responsesTo(id).length).toBe(1);
    expect(events(s)).toEqual([
      "1 turn_started",
      "1 retry_scheduled 1",
      "1 turn_ended 0",
      "1 retry_started 1",
      "1 retry_settled 1",
      "1 turn_ended 1",
    ]);
  });

  test("a failure after something was streamed is never retried", async () => {
    const s = scratch();
    const p = proxy(s, ["--retries", "2"]);
    const c = rawClient(p);
    const sessionId = await c.open();
    const { id, response } = c.prompt(sessionId, "streamed-503");
    expect((await response).error).toMatchObject({ code: 503 });
    p.child.stdin!.end();
    await p.exited;
    expect([c.responsesTo(id).length, c.text()]).toEqual([1, "partial answer"]);
    const settled = readJournal(journalOf(s)).records.find((r) => r.event === "retry_settled");
    expect(settled).toMatchObject({
      why: "not_retryable",
      reason: "output was already sent, so capacity is not retried",
    });
    expect(events(s)).toEqual(["1 turn_started", "1 retry_settled 0", "1 turn_ended 0"]);
  });

  test("an auth failure is never retried", async () => {
    const s = scratch();
    const p = proxy(s, ["--retries", "2"]);
    const c = rawClient(p);
    const sessionId = await c.open();
    const { id, response } = c.prompt(sessionId, "auth");
    expect((await response).error).toMatchObject({ code: 401 });
    p.child.stdin!.end();
    await p.exited;
    expect(c.responsesTo(id).length).toBe(1);
    const settled = readJournal(journalOf(s)).records.find((r) => r.event === "retry_settled");
    expect(settled).toMatchObject({ why: "not_retryable", reason: "auth is not retryable" });
  });

  test("turnguard retry runs a waiting retry now", async () => {
    const s = scratch();
    const p = proxy(s, ["--retries", "1"]);
    const c = rawClient(p);
    const sessionId = await c.open();
    const { id, response } = c.prompt(sessionId, "flaky 1 slow the answer");
    await journaled(s, "retry_scheduled");
    // The retry waits 100 s: the client has no answer yet.
    expect(c.responsesTo(id)).toEqual([]);
    const r = await turnguard(["retry", "ide", "--journal", journalOf(s)]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ide: retry 1 of 1 runs now \(signalled pid \d+\)\n$/);
    expect((await response).result).toEqual({ stopReason: "end_turn" });
    p.child.stdin!.end();
    await p.exited;
    expect([c.responsesTo(id).length, c.text()]).toEqual([1, "the answer"]);
  });

  test("a client cancel stops a waiting retry: the client gets the failed attempt", async () => {
    const s = scratch();
    const p = proxy(s, ["--retries", "1"]);
    const c = rawClient(p);
    const sessionId = await c.open();
    const { id, response } = c.prompt(sessionId, "flaky 1 slow never");
    await journaled(s, "retry_scheduled");
    c.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } });
    expect((await response).error).toMatchObject({
      code: 503,
      message: "UNAVAILABLE (code 503): The model is overloaded. Please retry in 100s.",
    });
    p.child.stdin!.end();
    await p.exited;
    expect(c.responsesTo(id).length).toBe(1);
    expect(events(s)).toEqual([
      "1 turn_started",
      "1 retry_scheduled 1",
      "1 turn_ended 0",
      "1 retry_settled 0",
    ]);
    const settled = readJournal(journalOf(s)).records.at(-1);
    expect(settled).toMatchObject({
      why: "stopped",
      reason: "retry 1 of 1 was stopped before it ran (the client cancelled)",
    });
  });

  test("a new prompt in the session stops a waiting retry first", async () => {
    const s = scratch();
    const p = proxy(s, ["--retries", "1"]);
    const c = rawClient(p);
    const sessionId = await c.open();
    const first = c.prompt(sessionId, "flaky 1 slow never");
    await journaled(s, "retry_scheduled");
    const second = c.prompt(sessionId, "echo hello");
    expect((await first.response).error).toMatchObject({ code: 503 });
    expect((await second.response).result).toEqual({ stopReason: "end_turn" });
    p.child.stdin!.end();
    await p.exited;
    expect([c.responsesTo(first.id).length, c.responsesTo(second.id).length]).toEqual([1, 1]);
    const settled = readJournal(journalOf(s)).records.find((r) => r.event === "retry_settled");
    expect(settled).toMatchObject({
      turn: 1,
      why: "stopped",
      reason: "retry 1 of 1 was stopped before it ran (a new prompt came in the session)",
    });
  });
});
