/**
 * `--fail-fast` on recorded agents that retry a spent quota blindly (the corpus's
 * `quota_daily`: the mock answered every request 429 `insufficient_quota`): opencode 1.18.33
 * retried silently, one ERROR line of its log per attempt, and qwen-code 0.2 took it for a
 * rate limit, one `api_error` record of its chat file per attempt, both until the recording
 * client cancelled after 60 s. The recorded agent side is played behind a real `turnguard
 * proxy --fail-fast`; the client sends the recorded lines but never cancels, as a client
 * that waits on the agent. turnguard answers it with the quota its evidence shows, and its
 * `session/cancel` is what lets the recorded agent finish. Claude Code's recordings (no
 * client cancel) are played at recorded times (`--recorded-times`): its retried spend limit
 * is cut in seconds, its retried rate limit, overload and 500 never.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { readTranscript } from "../../lib/record/transcript.ts";
import {
  BUN,
  killedAfterEach,
  MAIN,
  readOutcomes,
  scratch,
  startProxy,
} from "../fixtures/acp/harness.ts";
import { CORPUS } from "../agents/replay.ts";

setDefaultTimeout(60_000);
const track = killedAfterEach();

/** Generous smoke bound for "within a few seconds of the first attempt" on a loaded CI box. */
const FEW_SECONDS_MS = 15_000;

const ENV = (home: string) => ({
  TURNGUARD_REPLAY_HOME: home,
  XDG_DATA_HOME: join(home, ".local/share"),
  QWEN_HOME: join(home, ".qwen"),
  CLAUDE_CONFIG_DIR: join(home, ".claude"),
});

/**
 * Plays `agent`'s recorded `scenario` behind `turnguard proxy --fail-fast` and a client that
 * sends the recorded lines up to the prompt, never a cancel; `recordedTimes`: the agent side
 * keeps the recording's pace (a recording with no client cancel plays its whole turn so).
 */
async function playRecorded(
  agent: string,
  scenario: string,
  profile: string,
  recordedTimes: boolean,
) {
  const path = join(CORPUS, agent, `${scenario}.jsonl`);
  const { events } = readTranscript(path);
  const prompt = events.findIndex((e) => e.dir === "c2a" && e.line.includes('"session/prompt"'));
  const clientLines = events.slice(0, prompt + 1).filter((e) => e.dir === "c2a").map((e) => e.line);
  const promptId = JSON.parse(clientLines.at(-1)!).id as number;
  const s = scratch();
  const p = track(startProxy(
    s,
    ["--agent", profile, "--fail-fast", "--no-journal", "--outcome-file", s.outcomes],
    [BUN, MAIN, "replay", "--agent-side", ...(recordedTimes ? ["--recorded-times"] : []), path],
    ENV(s.home),
  ));
  let out = "";
  p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
  const answer = async (id: number) => {
    for (let i = 0; i < 1200; i++) {
      const line = out.split("\n").find((l) => l.startsWith(`{"jsonrpc":"2.0","id":${id},`));
      if (line) return JSON.parse(line);
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no answer to ${id}: ${out}\n${p.stderr()}`);
  };
  for (const line of clientLines.slice(0, -1)) {
    p.child.stdin!.write(line + "\n");
    await answer(JSON.parse(line).id);
  }
  const asked = Date.now();
  p.child.stdin!.write(clientLines.at(-1) + "\n");
  const reply = await answer(promptId);
  const ms = Date.now() - asked;
  // The recorded agent's own answer, if it comes after turnguard's: never forwarded.
  await new Promise((r) => setTimeout(r, 1500));
  p.child.stdin!.end();
  await p.exited;
  const answers = out.split("\n").filter((l) => l.startsWith(`{"jsonrpc":"2.0","id":${promptId},`));
  return { reply, ms, answers: answers.length, outcome: readOutcomes(s.outcomes)[0] };
}

describe("--fail-fast on a recorded quota the agent retries blindly", () => {
  const CASES = [
    { agent: "opencode", profile: "opencode", says: "You exceeded your current quota" },
    { agent: "qwen-code", profile: "qwen", says: "You exceeded your current quota" },
  ];
  for (const { agent, profile, says } of CASES) {
    test(`${agent}: the client gets quota in seconds, once; the recorded answer after the cancel is dropped`, async () => {
      const { events } = readTranscript(join(CORPUS, agent, "quota_daily.jsonl"));
      expect(events.some((e) => e.dir === "c2a" && e.line.includes("session/cancel"))).toBe(true);
      const r = await playRecorded(agent, "quota_daily", profile, false);
      expect(r.ms).toBeLessThan(FEW_SECONDS_MS);
      expect(r.reply.error.message).toContain(says);
      expect(r.reply.error.data.turnguard).toMatchObject({ status: "failed", category: "quota" });
      expect(r.reply.error.data.turnguard.attempts[0]).toMatchObject({ n: 1, category: "quota" });
      expect(r.answers).toBe(1);
      expect(r.outcome).toMatchObject({ status: "failed", error: { category: "quota" } });
      expect(r.outcome.endedEarly?.reason).toContain("quota");
    });
  }

  // claude-agent-acp 0.101.0 with Claude Code's default retries: the monthly spend limit
  // (429 enforced_spend_limit_reached, "You will regain access on 2026-12-01 at 00:00 UTC", a
  // time before the recording) retried 10 times over 146 s, one api_error record each
  // (retryInMs 543 ms first), answered -32603 at 185 s. Played at recorded times.
  test("claude-agent-acp: a spent limit whose reset had come is answered quota in seconds, once", async () => {
    const r = await playRecorded("claude-agent-acp", "quota_daily_retried", "claude", true);
    expect(r.ms).toBeLessThan(FEW_SECONDS_MS);
    expect(r.reply.error.message).toContain("You have reached your specified API usage limits");
    expect(r.reply.error.data.turnguard).toMatchObject({ status: "failed", category: "quota" });
    expect(r.reply.error.data.turnguard.attempts[0]).toMatchObject({
      n: 1,
      category: "quota",
      nextInMs: 543,
      agentN: 1,
    });
    expect(r.answers).toBe(1);
    expect(r.outcome.endedEarly?.reason).toContain("quota");
  });
});

describe("--fail-fast never cuts Claude Code's recorded retries of a retryable cause", () => {
  // Each recording holds Claude Code's api_error records of its retries, then its answer.
  const CASES = [
    { scenario: "rate_limit", category: "rate_limit" },
    { scenario: "overloaded", category: "capacity" },
    { scenario: "http_500", category: "capacity" },
  ];
  for (const { scenario, category } of CASES) {
    test(`claude-agent-acp ${scenario}: the agent's own answer, not ended early`, async () => {
      const path = join(CORPUS, "claude-agent-acp", `${scenario}.jsonl`);
      const { events } = readTranscript(path);
      expect(events.some((e) => e.dir === "file" && /subtype\W+api_error/.test(e.line))).toBe(
        true,
      );
      const r = await playRecorded("claude-agent-acp", scenario, "claude", true);
      expect(r.answers).toBe(1);
      expect(r.outcome).toMatchObject({ status: "failed", error: { category } });
      expect(r.outcome.endedEarly).toBeUndefined();
      expect(r.outcome.agentAttempts?.length ?? 0).toBeGreaterThanOrEqual(1);
    });
  }
});
