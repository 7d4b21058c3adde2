/**
 * `turnguard replay --fail-fast FILE`, through dist/turnguard: what `--fail-fast` would have
 * done to a recorded turn. Claude Code retried a spent monthly limit for 185 s in its
 * recording (tests/agents/corpus/claude-agent-acp/quota_daily_retried.jsonl); replayed at
 * recorded times behind `proxy --fail-fast`, the turn ends early, in seconds (the replay
 * closes once nothing asked is unanswered: the agent's own late answer, which the proxy
 * drops, is not waited for). opencode's recorded client cancelled its quota turn after
 * 60 s; its first error line came 21 s into the turn, and at recorded times turnguard's
 * live evidence ends the turn there. A retried 500 is never ended early; without the flag
 * nothing is.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { ROOT, runProcess } from "../helpers/cli.ts";
import { CORPUS } from "../agents/replay.ts";

setDefaultTimeout(120_000);
const BIN = join(ROOT, "dist/turnguard");

/** Generous smoke bound: the recorded turn took 185 s; the replay with the flag, seconds. */
const WELL_UNDER_RECORDED_MS = 60_000;

const replay = (args: string[]) => runProcess([BIN, "replay", ...args]);

describe("turnguard replay --fail-fast", () => {
  test("Claude Code's retried spend limit: ended early, quota, in seconds", async () => {
    const started = Date.now();
    const r = await replay([
      "--fail-fast",
      join(CORPUS, "claude-agent-acp", "quota_daily_retried.jsonl"),
    ]);
    expect(Date.now() - started).toBeLessThan(WELL_UNDER_RECORDED_MS);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(
        /^session \S+ turn 1: failed \(quota\): .*usage limits.*\[live:records\]/,
      ),
      expect.stringMatching(
        /^ {2}ended early: --fail-fast: .*quota.*attempt 1, seen in its session records\)$/,
      ),
    ]);
  });

  test("opencode's quota: played at recorded times, the live evidence ends it before the recorded cancel", async () => {
    const path = join(CORPUS, "opencode", "quota_daily.jsonl");
    const r = await replay(["--fail-fast", path]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/turn 1: failed \(quota\)/);
    expect(r.stdout).toContain("ended early: --fail-fast");
    const plain = await replay([path]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).not.toContain("ended early");
  });

  test("Claude Code's retried 500 is never ended early", async () => {
    const r = await replay(["--fail-fast", join(CORPUS, "claude-agent-acp", "http_500.jsonl")]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/turn 1: failed \(capacity\)/);
    expect(r.stdout).not.toContain("ended early");
  });
});
