/**
 * `turnguard proxy --record` and `turnguard replay`, round trip, on the compiled binary: an
 * agent turnguard has no pack for (examples/agents/scribe: a swallowed quota failure only
 * its session file tells, and a clean turn) runs under `proxy --record` with a user profile
 * whose session records are named after the session's cwd (`{cwd:alnum}`); replaying the
 * recording with the same config gives the live run's Outcomes. A corpus transcript,
 * replayed through `proxy --record`, re-records to a recording that replays the same.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { ROOT, runProcess } from "../helpers/cli.ts";
import {
  killedAfterEach,
  openSession,
  prompt,
  readOutcomes,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";
import { CORPUS } from "../agents/replay.ts";
import { replayRecording } from "../../lib/cli/replay.ts";
import { readTranscript } from "../../lib/record/transcript.ts";
import type { Outcome } from "../../lib/core/outcome.ts";

setDefaultTimeout(60_000);
const track = killedAfterEach();

const SCRIBE = join(ROOT, "examples", "agents", "scribe");
const CONFIG = join(SCRIBE, "turnguard.toml");

let bin: string;
beforeAll(() => {
  bin = ensureBinary();
});
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) void runProcess(["rm", "-rf", d]);
});

/** Status and category of each Outcome, in order. */
const verdicts = (outcomes: Outcome[]) =>
  outcomes.map((o) => [o.session, o.turn, o.status, o.error?.category ?? null]);

/** Runs scribe under `proxy --record` for `prompts` in one session; the live Outcomes. */
async function recordScribe(prompts: string[]) {
  const s = scratch();
  dirs.push(s.dir);
  const recording = join(s.dir, "scribe.rec");
  const p = startProxy(
    s,
    ["--record", recording, "--config", CONFIG, "--agent", "scribe", "--outcome-file", s.outcomes],
    ["node", join(SCRIBE, "agent.mjs")],
    {},
    [bin],
  );
  track(p);
  await withClient(p, async (ctx) => {
    // openSession names cwd "/tmp", not the proxy's own cwd (the scratch directory).
    const sessionId = await openSession(ctx);
    // A failed turn nothing was streamed for is answered as an error: the client goes on.
    for (const text of prompts) await prompt(ctx, sessionId, text).catch(() => null);
  });
  const exit = await p.exited;
  expect([exit.code, p.stderr()]).toEqual([0, ""]);
  return { s, recording, live: readOutcomes(s.outcomes) };
}

describe("proxy --record, then replay --config", () => {
  test("a swallowed failure and a clean turn replay to the live run's Outcomes", async () => {
    const { s, recording, live } = await recordScribe(["check my quota", "say hello"]);
    // Read off the agent's script: the quota error is only in the session file, which
    // lives under the session's cwd ("/tmp" → "-tmp"), not the proxy's.
    expect(verdicts(live)).toEqual([
      ["scribe-1", 1, "failed", "quota"],
      ["scribe-1", 2, "ok", null],
    ]);
    expect(statSync(recording).mode & 0o777).toBe(0o600);
    const { header, events } = readTranscript(recording);
    expect(header).toMatchObject({
      agent: "node",
      profile: "scribe",
      files: "writes",
      home: "$HOME",
      cwd: s.dir,
    });
    // The session file, write by write, as $HOME paths; the log; nothing else of HOME.
    const files = events.filter((e) => e.dir === "file").map((e) => JSON.parse(e.line));
    expect(new Set(files.map((f) => f.path))).toEqual(
      new Set(["$HOME/.scribe/sessions/-tmp/scribe-1.jsonl", "$HOME/.scribe/scribe.log"]),
    );
    const session = files.filter((f) => f.path.endsWith("scribe-1.jsonl"));
    expect(session.every((f) => f.append === true)).toBe(true);
    expect(session.map((f) => f.content).join("")).toBe(
      readFileSync(join(s.home, ".scribe", "sessions", "-tmp", "scribe-1.jsonl"), "utf8"),
    );
    // The wire both ways, the prompts included, and the client's close.
    expect(events.filter((e) => e.dir === "c2a").map((e) => JSON.parse(e.line).method)).toEqual([
      "initialize",
      "session/new",
      "session/prompt",
      "session/prompt",
    ]);
    expect(events.some((e) => e.dir === "c2a" && e.line.includes("check my quota"))).toBe(true);
    expect(events.some((e) => e.dir === "meta" && e.line === "the client closed stdin")).toBe(
      true,
    );

    const r = await runProcess([bin, "replay", "--json", "--config", CONFIG, recording], {
      env: { TURNGUARD_CONFIG: undefined, HOME: s.home },
    });
    expect([r.code, r.stderr]).toEqual([0, ""]);
    const replayed = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Outcome);
    expect(verdicts(replayed)).toEqual(verdicts(live));
    expect(replayed[0].error).toMatchObject({
      code: "insufficient_quota",
      anchor: "records:scribe.session",
    });
  });

  test("session/load's cwd names the session's folder too", async () => {
    const s = scratch();
    dirs.push(s.dir);
    const p = startProxy(
      s,
      ["--config", CONFIG, "--agent", "scribe", "--outcome-file", s.outcomes],
      ["node", join(SCRIBE, "agent.mjs")],
      {},
      [bin],
    );
    track(p);
    await withClient(p, async (ctx) => {
      await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
      await ctx.request("session/load", { sessionId: "old-7", cwd: "/srv/app", mcpServers: [] });
      await prompt(ctx, "old-7", "check my quota").catch(() => null);
    });
    await p.exited;
    expect(readFileSync(join(s.home, ".scribe/sessions/-srv-app/old-7.jsonl"), "utf8")).toContain(
      "insufficient_quota",
    );
    expect(verdicts(readOutcomes(s.outcomes))).toEqual([["old-7", 1, "failed", "quota"]]);
  });

  test("--record names a directory: a usage error (125) before the agent starts", async () => {
    const s = scratch();
    dirs.push(s.dir);
    const r = await runProcess(
      [bin, "proxy", "--record", s.dir, "--", "node", join(SCRIBE, "agent.mjs")],
      { env: { TURNGUARD_CONFIG: undefined, HOME: s.home } },
    );
    expect([r.code, r.stderr.trim()]).toEqual([
      125,
      `turnguard: --record ${s.dir} is a directory, not a regular file`,
    ]);
  });
});

describe("a corpus transcript, re-recorded", () => {
  test("replayed through proxy --record, the re-recording replays to the same Outcomes", async () => {
    const s = scratch();
    dirs.push(s.dir);
    const original = join(CORPUS, "claude-code-acp", "quota_daily.jsonl");
    const again = join(s.dir, "again.rec");
    const first = await replayRecording(original, readTranscript(original), {
      profile: "claude",
      config: null,
      self: [bin],
      proxyArgs: ["--record", again],
    });
    expect(first.outcomes.length).toBeGreaterThan(0);
    const rerecorded = readTranscript(again);
    expect(rerecorded.header.profile).toBe("claude");
    expect(rerecorded.events.some((e) => e.dir === "file")).toBe(true);
    const second = await replayRecording(again, rerecorded, {
      profile: "claude",
      config: null,
      self: [bin],
    });
    const pick = (o: Outcome[]) => o.map((x) => [x.turn, x.status, x.error?.category ?? null]);
    expect(pick(second.outcomes)).toEqual(pick(first.outcomes));
  });
});
