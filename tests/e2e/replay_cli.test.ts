/**
 * `turnguard replay FILE`, on the compiled binary: recordings of the real-agent corpus run
 * through a real proxy with the built-in config give the Outcomes a person expects of them
 * (SCENARIO.expect.json: the truth, or the blind spot turnguard reports instead), the
 * `--json` form is one Outcome per line, and a broken recording is one line naming file and
 * line, exit 2.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { runProcess } from "../helpers/cli.ts";
import { CORPUS } from "../agents/replay.ts";
import { readExpected } from "../agents/expected.ts";
import type { Outcome } from "../../lib/core/outcome.ts";

setDefaultTimeout(60_000);

let bin: string;
let dir: string;
beforeAll(() => {
  bin = ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "tg-replay-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The built-in profile of each corpus agent (the corpus names agents by package). */
const PROFILE: Record<string, string> = {
  "claude-agent-acp": "claude",
  "claude-code-acp": "claude",
  "codex-acp": "codex",
  "gemini-cli": "gemini",
};

const CASES: [string, string][] = [
  ["claude-agent-acp", "clean_after_error"],
  ["claude-code-acp", "quota_daily"],
  ["codex-acp", "clean_after_error"],
  ["codex-acp", "quota_daily"],
  ["gemini-cli", "clean_after_error"],
  ["gemini-cli", "auth_401"],
];

describe("turnguard replay", () => {
  for (const [agent, scenario] of CASES) {
    test(`${agent}/${scenario}: the Outcomes a person expects`, async () => {
      const r = await runProcess(
        [
          bin,
          "replay",
          "--json",
          "--agent",
          PROFILE[agent],
          join(CORPUS, agent, `${scenario}.jsonl`),
        ],
        { env: { TURNGUARD_CONFIG: undefined, HOME: dir } },
      );
      expect([r.code, r.stderr]).toEqual([0, ""]);
      const outcomes = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Outcome);
      const want = readExpected(join(CORPUS, agent, `${scenario}.expect.json`));
      const verdicts = [...(want.earlier ?? []), want.blindSpot ?? want];
      expect(outcomes.map((o) => [o.status, o.error?.category ?? null])).toEqual(
        verdicts.map((w) => [w.status, w.category]),
      );
    });
  }

  test("an agent no profile matches: the generic path alone, said once on stderr", async () => {
    const r = await runProcess(
      [bin, "replay", "--json", join(CORPUS, "gemini-cli", "auth_401.jsonl")],
      { env: { TURNGUARD_CONFIG: undefined, HOME: dir } },
    );
    expect(r.stderr.trim()).toBe(
      'turnguard: replay: no profile matches agent "gemini-cli": the generic path alone ' +
        "(--agent NAME names one)",
    );
    const o = JSON.parse(r.stdout) as Outcome;
    expect([o.agent, o.status]).toEqual(["turnguard", "failed"]);
  });

  test("text form: one line per turn; --verbose adds the diagnostics", async () => {
    const r = await runProcess(
      [bin, "replay", join(CORPUS, "codex-acp", "clean_after_error.jsonl")],
      { env: { TURNGUARD_CONFIG: undefined, HOME: dir } },
    );
    const lines = r.stdout.trim().split("\n");
    expect(lines.length).toBe(2);
    expect(lines[0]).toMatch(/^session \S+ turn 1: failed \(/);
    expect(lines[1]).toMatch(/^session \S+ turn 2: ok; stop end_turn, reply \d+ chars$/);
  });

  test("a broken recording: one line naming file and line, exit 2", async () => {
    const path = join(dir, "broken.jsonl");
    const header = readFileLine(join(CORPUS, "codex-acp", "ok.jsonl"));
    writeFileSync(path, `${header}\n{"t":1,"dir":"c2a","line":"x"}\n{"t":2,"dir":"sideways"}\n`);
    const r = await runProcess([bin, "replay", path], { env: { HOME: dir } });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^turnguard: ${path}:3: dir: `)),
    ]);
    const missing = await runProcess([bin, "replay", join(dir, "nope.jsonl")], {
      env: { HOME: dir },
    });
    expect([missing.code, missing.stderr.trim()]).toEqual([
      2,
      `turnguard: ${join(dir, "nope.jsonl")}: cannot read the recording (ENOENT)`,
    ]);
  });
});

function readFileLine(path: string): string {
  return readFileSync(path, "utf8").split("\n")[0];
}
