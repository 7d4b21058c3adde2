/**
 * `turnguard run --fail-fast` end to end: a print-mode agent that retries a failing request
 * for minutes, one log line per attempt (tests/fixtures/retrying_print_agent.ts), is stopped
 * as soon as its log shows a cause retrying cannot cure; a retryable one runs to its end.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { scratch, testEnv } from "../fixtures/acp/harness.ts";
import { BUN, ROOT, turnguard } from "../helpers/cli.ts";
import type { Outcome } from "../../lib/core/outcome.ts";

setDefaultTimeout(60_000);

const AGENT = join(ROOT, "tests/fixtures/retrying_print_agent.ts");
/** Generous smoke bound for "within a few seconds of the first attempt" on a loaded CI box. */
const FEW_SECONDS_MS = 15_000;

function run(kind: string, extra: string[] = [], n?: number) {
  const s = scratch();
  const journal = join(s.dir, "journal.jsonl");
  const args = [
    "run",
    "--config",
    s.config,
    "--agent",
    "fake",
    "--journal",
    journal,
    "--outcome-json",
    ...extra,
    "--",
    BUN,
    AGENT,
    kind,
    ...(n !== undefined ? [String(n)] : []),
  ];
  const started = Date.now();
  return turnguard(args, { env: testEnv(s), cwd: s.dir }).then((r) => ({
    ...r,
    ms: Date.now() - started,
    outcome: JSON.parse(r.stdout) as Outcome,
    journal: readFileSync(journal, "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l)),
  }));
}

describe("run --fail-fast", () => {
  test("a quota retried blindly stops the agent and fails in seconds", async () => {
    const r = await run("quota", ["--fail-fast"]);
    expect(r.ms).toBeLessThan(FEW_SECONDS_MS);
    expect(r.code).toBe(1);
    expect(r.outcome).toMatchObject({ status: "failed", error: { category: "quota" } });
    expect(r.outcome.endedEarly?.reason).toContain("--fail-fast");
    expect(r.outcome.agentAttempts?.[0]).toMatchObject({
      n: 1,
      category: "quota",
      retryable: false,
    });
    // Each attempt seen is journaled before the turn's end.
    const events = r.journal.map((j) => j.event);
    expect(events).toContain("agent_attempt");
    expect(events.indexOf("agent_attempt")).toBeLessThan(events.indexOf("turn_ended"));
    expect(r.stderr).toContain("quota");
  });

  test("a retryable 503 is never cut short: the agent's own failure after its attempts", async () => {
    const r = await run("503", ["--fail-fast"], 10);
    expect(r.code).toBe(1);
    expect(r.outcome.endedEarly).toBeUndefined();
    expect(r.outcome.error?.category).toBe("capacity");
    expect(r.outcome.agentAttempts?.length).toBeGreaterThanOrEqual(3);
    expect(r.outcome.agentAttempts?.[0]).toMatchObject({ retryable: true, nextInMs: 1000 });
  });

  test("--timeout says what the agent was doing", async () => {
    const r = await run("503", ["--timeout", "2"]);
    expect(r.code).toBe(124);
    expect(r.outcome.error?.message).toMatch(
      /stopped after 2s \(--timeout\); the agent was retrying a 503 \(capacity\), attempt \d+/,
    );
  });
});
