/**
 * Records on time on a loaded machine: the corpus replayed with every session-file write the
 * agent made after it answered a prompt coming several times as late as recorded
 * (`turnguard replay --late`), so the proxy must wait for the turn's end record its readers
 * declare (`endsTurn`, `records_wait_ms`) instead of a fixed window. The Outcomes must be
 * those a person expects of the recording (SCENARIO.expect.json, as at recorded times).
 * Past the bound, the first Outcome is decided without the late records and the journal
 * gets the revision once they land; `turnguard log` shows it.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Replayed, replayRecording } from "../../lib/cli/replay.ts";
import type { Outcome } from "../../lib/core/outcome.ts";
import { readExpected, type Verdict } from "../agents/expected.ts";
import { readTranscript } from "../agents/transcript.ts";
import { CORPUS, corpusCases, PROFILE, turnguardBinary } from "../agents/replay.ts";
import { turnguard } from "../helpers/cli.ts";
import {
  openSession,
  profileArgs,
  prompt,
  readOutcomes,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";

setDefaultTimeout(120_000);

/**
 * Late writes come this many times as late as recorded (the player's cap grows with it, to
 * 6 s): a transcript write of Claude Code 120 ms after the answer comes 1.2 s after it, past
 * every fixed settle window the profiles had (50–200 ms) and within records_wait_ms. qwen's
 * writes later than the bound are not its turn's records (it records a prompt's answer
 * before it answers: `answerFirst`).
 */
const LATE = 10;
/**
 * The agents whose recorded session records land after they answered (docs/AGENTS.md):
 * Claude Code 2.1.44 flushes its transcript 10–120 ms later, codex's background writer
 * some milliseconds later, qwen-code's records up to about a second later.
 */
const LATE_AGENTS = ["claude-code-acp", "codex-acp", "qwen-code"];

function replayLate(agent: string, path: string, opts: { config?: string; journal?: string }) {
  return replayRecording(path, readTranscript(path), {
    profile: PROFILE[agent],
    config: opts.config ?? null,
    self: [turnguardBinary()],
    lateFactor: LATE,
    ...(opts.journal ? { journal: opts.journal } : {}),
  });
}

function meets(o: Outcome, want: Omit<Verdict, "why">, turn: number): void {
  expect({
    turn,
    status: o.status,
    category: o.error?.category ?? null,
    retryable: o.retry?.retryable ?? null,
  }).toEqual({ turn, status: want.status, category: want.category, retryable: want.retryable });
  if (want.message !== undefined) {
    expect(o.error?.message.toLowerCase() ?? "").toContain(want.message.toLowerCase());
  }
}

const cases = corpusCases().filter(([agent]) => LATE_AGENTS.includes(agent));

/**
 * How many replays run at once, in corpus order; each test awaits its own. A replay spends
 * most of its time asleep (the player holds each late write up to 6 s), so several share the
 * cores without crowding each other: a late end record still lands well within the bound.
 */
const WIDTH = 8;
let replays: Map<string, Promise<Replayed>> | null = null;
function replayed(path: string): Promise<Replayed> {
  if (replays === null) {
    const started = new Map<string, Promise<Replayed>>();
    const settle = new Map<string, (r: Promise<Replayed>) => void>();
    for (const [, , p] of cases) started.set(p, new Promise((r) => settle.set(p, r)));
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const [agent, , p] = cases[next++];
        const r = replayLate(agent, p, {});
        settle.get(p)!(r);
        await r.catch(() => {});
      }
    };
    for (let i = 0; i < WIDTH; i++) void worker();
    replays = started;
    // The two single replays below sleep as long: they go on meanwhile, not after.
    void revisedReplay().catch(() => {});
    void nowhereOutcomes().catch(() => {});
  }
  return replays.get(path)!;
}

/** `run()`'s promise, started on the first call (a test filter may run any test alone). */
function once<T>(run: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | null = null;
  return () => (p ??= run());
}

/** Scratch directories of the single replays, removed when the file is done. */
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/**
 * claude-code-acp clean_after_error 10 times as late with no wait for records at all
 * (`records_wait_ms = 0`): each turn is decided from what landed when the agent answered.
 */
const revisedReplay = once(async () => {
  const dir = mkdtempSync(join(tmpdir(), "turnguard-late-"));
  dirs.push(dir);
  const config = join(dir, "turnguard.toml");
  writeFileSync(config, "[agent.claude]\nrecords_wait_ms = 0\n");
  const journal = join(dir, "journal.jsonl");
  const path = join(CORPUS, "claude-code-acp", "clean_after_error.jsonl");
  return { journal, r: await replayLate("claude-code-acp", path, { config, journal }) };
});

/**
 * Two prompts in one session through the claude profile, whose records are nowhere: the fake
 * agent writes no transcript for `echo`. What each Outcome says of the session records.
 */
const nowhereOutcomes = once(async () => {
  const s = scratch();
  dirs.push(s.dir);
  const p = startProxy(s, profileArgs(s, "claude"));
  try {
    await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      await prompt(ctx, sessionId, "echo one");
      await prompt(ctx, sessionId, "echo two");
    });
    await p.exited;
  } finally {
    p.child.kill("SIGKILL");
  }
  return readOutcomes(s.outcomes).map((o) =>
    o.diagnostics.find((d) => d.startsWith("the session records did not show")) ?? ""
  );
});

describe(`the corpus with the agents' late record writes ${LATE} times as late`, () => {
  test("there are cases", () => expect(cases.length).toBeGreaterThan(0));
  for (const [agent, scenario, path] of cases) {
    test(`${agent} ${scenario}: the Outcomes of the recorded times`, async () => {
      const want = readExpected(path.replace(/\.jsonl$/, ".expect.json"));
      const r = await replayed(path);
      const turns = [...(want.earlier ?? []), want.blindSpot ?? want];
      expect(r.outcomes.length).toBe(turns.length);
      r.outcomes.forEach((o, i) => meets(o, turns[i], i + 1));
      // Every turn's end was read within the bound: none was decided without it.
      for (const o of r.outcomes) {
        expect(o.diagnostics.filter((d) => d.includes("records_wait_ms"))).toEqual([]);
      }
    });
  }
});

describe("the built-in readers declare their turn's end", () => {
  test("turnguard check says the proxy awaits it, up to records_wait_ms", async () => {
    const r = await turnguard(["check", "-v"]);
    for (const reader of ["claude.transcript", "codex.rollout", "qwen.chat"]) {
      expect(r.stdout).toContain(
        `session records (end record awaited up to 3000 ms; readers ${reader})`,
      );
    }
  });
});

describe("past records_wait_ms: a revised Outcome in the journal", () => {
  test("claude-code-acp clean_after_error: the second turn, decided early, is revised to ok (journal and outcome file)", async () => {
    const { journal, r } = await revisedReplay();
    // The client was answered from the records that had landed: the earlier turn's
    // retried error read as this turn's.
    expect(r.outcomes.map((o) => o.status)).toEqual(["failed", "truncated"]);
    expect(r.outcomes[1].diagnostics.join("\n")).toContain("records_wait_ms (0 ms)");
    const records = readFileSync(journal, "utf8").split("\n").filter((l) => l).map((l) =>
      JSON.parse(l)
    );
    const revised = records.filter((x) => x.event === "turn_revised");
    expect(revised.length).toBe(1);
    expect(revised[0].turn).toBe(2);
    expect(revised[0].revision).toBe(1);
    expect(revised[0].outcome.status).toBe("ok");
    expect(revised[0].outcome.error).toBeNull();
    // The outcome file gets it too, as another line for the same turn.
    expect(r.revisions.map((o) => [o.turn, o.revision, o.status])).toEqual([[2, 1, "ok"]]);
    expect(r.revisions[0].session).toBe(r.outcomes[1].session);
    const log = await turnguard(["log", "--journal", journal]);
    expect(log.stdout).toMatch(/#2 +ok \(revised from truncated\)/);
    const json = await turnguard(["log", "--json", "--journal", journal]);
    const rows = json.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(rows[1].revised).toEqual({ revision: 1, from: "truncated" });
    const wait = await turnguard(["wait", "--json", "--journal", journal]);
    expect(JSON.parse(wait.stdout).revised).toEqual({ revision: 1, from: "truncated" });
  });
});

describe("records that are nowhere", () => {
  test("awaited once for the bound, then only the settle window, per session", async () => {
    const [one, two] = await nowhereOutcomes();
    expect(one).toContain("within records_wait_ms (3000 ms)");
    expect(two).toContain("within records_settle_ms (none were found");
  });
});
