/**
 * Proxy turns in the journal, through the proxy's turn end (lib/proxy/turn_end.ts): a real
 * fake ACP agent behind an in-process proxy, a raw JSON-RPC client on its streams.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { readJournal } from "../../lib/journal/reader.ts";
import { JournalWriter } from "../../lib/journal/writer.ts";
import { type ProxyOptions, runProxy } from "../../lib/proxy/proxy.ts";
import type { TurnEndSteps } from "../../lib/proxy/turn_end.ts";
import { loadRegistry, profileClassifier, selectProfile } from "../../lib/config/registry.ts";
import { TurnRecorder } from "../../lib/retry/turn_recorder.ts";
import type { JournalRecord } from "../../lib/journal/records.ts";
import { RetryWaits } from "../../lib/retry/waits.ts";
import { BUN, ROOT, turnguard } from "../helpers/cli.ts";

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

async function proxyWith(
  turnEnd: TurnEndSteps,
  c: ReturnType<typeof client>,
  extra: Partial<ProxyOptions> = {},
) {
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
    turnEnd,
    ...extra,
  });
}

describe("proxy turns are journaled by the turn's end", () => {
  test("the classic bug in one session: turn 2 fails with 503 after turn 1 answered", async () => {
    const recorder = new TurnRecorder({
      journal: new JournalWriter({ path: journal }),
      name: "ide",
      policy: { retries: 0, maxWaitMs: 300_000 },
    });
    const c = client();
    // When the client gets the failed response, the journal already has the decision and
    // the end (the turn's end records before it sends).
    const seenAtResponse: string[][] = [];
    c.onResponse.push(() => {
      seenAtResponse.push(readJournal(journal).records.map((r) => `${r.turn} ${r.event}`));
    });
    const done = proxyWith({ recorder }, c);
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

  test(
    "a retry waits with the response held; it re-sends the prompt, journaled in order",
    async () => {
      const records: JournalRecord[] = [];
      const recorder = new TurnRecorder({
        journal: { append: (r) => void records.push(r) },
        name: "ide",
        policy: { retries: 1, maxWaitMs: 300_000 },
        random: () => 0.5,
      });
      // Signals never come: the test runs the waiting retry itself (as `turnguard retry` does).
      const waits = new RetryWaits({ on: () => {}, off: () => {} });
      const c = client();
      const done = proxyWith({ recorder }, c, { retryWaits: waits });
      await c.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
      const session = await c.request("session/new", { cwd: dir, mcpServers: [] });
      const sessionId = (session.result as { sessionId: string }).sessionId;
      let answered = false;
      // Both plays of the prompt fail with a 503 asking to wait 100 s: the retry never runs
      // by itself while the test looks.
      const answer = c.promptText(sessionId, "flaky 2 slow the answer").then((r) => (
        answered = true, r
      ));
      while (!records.some((r) => r.event === "turn_ended")) {
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(records.map((r) => r.event)).toEqual([
        "turn_started",
        "retry_scheduled",
        "turn_ended",
      ]);
      expect(records[1]).toMatchObject({ attempt: 1, of: 1, afterMs: 100_000 });
      await new Promise((r) => setTimeout(r, 50));
      expect(answered).toBe(false);
      expect(waits.runNow()).toBe(1);
      // The retry fails the same way: the retries are used up, the client gets the 503.
      expect(((await answer).error as { code: number }).code).toBe(503);
      c.input.end();
      await done;
      expect(records.map((r) => `${r.event} ${"attempt" in r ? r.attempt : "-"}`)).toEqual([
        "turn_started -",
        "retry_scheduled 1",
        "turn_ended 0",
        "retry_started 1",
        "retry_settled 1",
        "turn_ended 1",
      ]);
    },
    60_000,
  );
});
