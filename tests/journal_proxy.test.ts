/**
 * Proxy turns in the journal, through the proxy's own hooks: a real fake ACP agent behind
 * an in-process proxy, a raw JSON-RPC client on its streams.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { readJournal } from "../lib/journal/reader.ts";
import { JournalWriter } from "../lib/journal/writer.ts";
import { journalHooks, type NoRetryRecorder } from "../lib/proxy/journal_hooks.ts";
import { composeHooks, type TurnHooks } from "../lib/proxy/hooks.ts";
import { runProxy } from "../lib/proxy/proxy.ts";
import { loadRegistry, profileClassifier, selectProfile } from "../lib/config/registry.ts";
import { TurnRecorder } from "../lib/retry/turn_recorder.ts";
import type { JournalRecord } from "../lib/journal/records.ts";
import type { RetryPolicy, ScheduledRetry } from "../lib/retry/policy.ts";
import type { Turn } from "../lib/proxy/turns.ts";
import type { Outcome } from "../lib/core/outcome.ts";
import { BUN, DENO, ROOT, runProcess, turnguard } from "./helpers/cli.ts";

const AGENT = join(ROOT, "tests", "fixtures", "acp", "agent.ts");

let dir: string;
let journal: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-journal-proxy-"));
  journal = join(dir, "journal.jsonl");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A JSON-RPC client on the proxy's streams: sends requests, awaits their responses. */
function client() {
  const input = new PassThrough();
  const output = new PassThrough();
  const waiting = new Map<number, (m: Record<string, unknown>) => void>();
  const onResponse: Array<(m: Record<string, unknown>) => void> = [];
  let buffered = "";
  let next = 0;
  output.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let nl = buffered.indexOf("\n"); nl !== -1; nl = buffered.indexOf("\n")) {
      const message = JSON.parse(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      if (message.method === undefined && typeof message.id === "number") {
        for (const f of onResponse) f(message);
        waiting.get(message.id)?.(message);
      }
    }
  });
  const request = (method: string, params: unknown) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      input.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  const promptText = (sessionId: string, text: string) =>
    request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  return { input, output, request, promptText, onResponse };
}

async function proxyWith(hooks: TurnHooks, c: ReturnType<typeof client>) {
  const env = { ...process.env, HOME: dir };
  const registry = await loadRegistry({ env, cwd: dir });
  const profile = selectProfile(registry, undefined, AGENT);
  return runProxy({
    command: BUN,
    args: [AGENT],
    profile,
    classifier: profileClassifier(registry, profile),
    env,
    input: c.input,
    output: c.output,
    stderr: new PassThrough(),
    forwardSignals: false,
    graceMs: 500,
    hooks,
  });
}

describe("proxy turns are journaled through the turn hooks", () => {
  test("the classic bug in one session: turn 2 fails with 503 after turn 1 answered", async () => {
    const recorder = new TurnRecorder({
      journal: new JournalWriter({ path: journal }),
      name: "ide",
      policy: { retries: 0, maxWaitMs: 300_000 },
    });
    const c = client();
    // When the client gets the failed response, the journal already has the decision and
    // the end (the proxy calls turnEnded before it forwards the response).
    const seenAtResponse: string[][] = [];
    c.onResponse.push(() => {
      seenAtResponse.push(readJournal(journal).records.map((r) => `${r.turn} ${r.event}`));
    });
    const done = proxyWith(composeHooks({}, journalHooks(recorder, "fake")), c);
    await c.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const session = await c.request("session/new", { cwd: dir, mcpServers: [] });
    const sessionId = (session.result as { sessionId: string }).sessionId;
    const first = await c.promptText(sessionId, "echo the answer before");
    expect(first.result).toEqual({ stopReason: "end_turn" });
    const second = await c.promptText(sessionId, "error-503");
    expect((second.error as { code: number }).code).toBe(503);
    c.input.end();
    expect((await done).exitCode).toBe(0);

    expect(seenAtResponse.at(-1)).toEqual([
      "1 turn_started",
      "1 turn_ended",
      "2 turn_started",
      "2 retry_settled",
      "2 turn_ended",
    ]);
    const records = readJournal(journal).records;
    expect(records.map((r) => [r.name, r.session, r.turn, r.event])).toEqual([
      ["ide", sessionId, 1, "turn_started"],
      ["ide", sessionId, 1, "turn_ended"],
      ["ide", sessionId, 2, "turn_started"],
      ["ide", sessionId, 2, "retry_settled"],
      ["ide", sessionId, 2, "turn_ended"],
    ]);
    const startedRecord = records[2];
    expect(startedRecord.event === "turn_started" && startedRecord.promptId).toBe(3);

    const env = { TURNGUARD_JOURNAL: journal };
    const r = await turnguard(["wait", "ide", "--print"], { env });
    expect(r.stdout).not.toContain("the answer before");
    expect(r.stdout).toMatch(
      /^ide {2}ready: turn failed\nerror: .*overloaded.*\nno retry waits \(retries are off\)\n$/,
    );
    expect(r.code).toBe(1);
    const json = JSON.parse((await turnguard(["wait", sessionId, "--json"], { env })).stdout);
    expect([json.turn, json.status, json.error.category, json.reply]).toEqual([
      2,
      "failed",
      "capacity",
      "",
    ]);
  }, 60_000);

  test("retries are handed to the executor; its begin and stop are journaled", async () => {
    const records: JournalRecord[] = [];
    const recorder = new TurnRecorder({
      journal: { append: (r) => void records.push(r) },
      name: "ide",
      policy: { retries: 1, maxWaitMs: 300_000 },
      random: () => 0.5,
    });
    const handed: Array<{ turn: Turn; decision: ScheduledRetry; begin(): void }> = [];
    const hooks = journalHooks(recorder, "fake", {
      retry: (turn, decision, run) => void handed.push({ turn, decision, begin: run.begin }),
    });
    let failed: Outcome | null = null;
    const c = client();
    const done = proxyWith(
      composeHooks(hooks, { turnEnded: (o) => void (failed ??= o) }),
      c,
    );
    await c.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const session = await c.request("session/new", { cwd: dir, mcpServers: [] });
    const sessionId = (session.result as { sessionId: string }).sessionId;
    await c.promptText(sessionId, "error-503");
    c.input.end();
    await done;
    expect(handed.map((h) => [h.turn.sessionId, h.turn.turn, h.decision])).toEqual([
      [sessionId, 1, { kind: "retry", attempt: 1, of: 1, afterMs: 3750, reason: "capacity" }],
    ]);
    // The executor runs the retry: it begins, and its end is attempt 1 of the same turn.
    handed[0].begin();
    hooks.turnEnded!({ ...failed!, status: "ok", error: null }, handed[0].turn);
    expect(records.map((r) => `${r.event} ${"attempt" in r ? r.attempt : "-"}`)).toEqual([
      "turn_started -",
      "retry_scheduled 1",
      "turn_ended 0",
      "retry_started 1",
      "retry_settled 1",
      "turn_ended 1",
    ]);
  }, 60_000);

  test("a recorder that may retry is refused without an executor", async () => {
    // The types refuse it (checked by deno on a fixture); a cast is refused at run time.
    const check = await runProcess(
      [DENO, "check", join(ROOT, "tests", "fixtures", "journal", "hooks_types.ts")],
      { env: { NO_COLOR: "1" } },
    );
    expect([check.code, check.stderr]).toEqual([
      0,
      "Check tests/fixtures/journal/hooks_types.ts\n",
    ]);
    const policy: RetryPolicy = { retries: 2, maxWaitMs: 1000 };
    const recorder = new TurnRecorder({ journal: null, name: "n", policy });
    expect(() => journalHooks(recorder as unknown as NoRetryRecorder, "fake")).toThrow(
      "journalHooks: a recorder with 2 retries needs a RetryExecutor",
    );
  }, 60_000);

  test("composeHooks calls every set in order and merges beforeRespond patches", async () => {
    const calls: string[] = [];
    const hooks = composeHooks(
      {
        turnStarted: () => void calls.push("a start"),
        beforeRespond: (_t, o) => {
          calls.push(`a before ${o.diagnostics.join(",")}`);
          return Promise.resolve({ diagnostics: [...o.diagnostics, "a"] });
        },
        turnEnded: (o) => void calls.push(`a end ${o.diagnostics.join(",")}`),
      },
      {},
      {
        turnStarted: () => void calls.push("b start"),
        beforeRespond: (_t, o) => {
          calls.push(`b before ${o.diagnostics.join(",")}`);
          return Promise.resolve();
        },
        turnEnded: (o) => void calls.push(`b end ${o.diagnostics.join(",")}`),
      },
    );
    const c = client();
    const done = proxyWith(hooks, c);
    await c.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const session = await c.request("session/new", { cwd: dir, mcpServers: [] });
    await c.promptText((session.result as { sessionId: string }).sessionId, "echo hi");
    c.input.end();
    await done;
    expect(calls).toEqual([
      "a start",
      "b start",
      "a before ",
      "b before a",
      "a end a",
      "b end a",
    ]);
  }, 60_000);
});
