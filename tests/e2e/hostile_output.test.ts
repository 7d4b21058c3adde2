/**
 * Everything turnguard writes arrives whole, whatever the reader: every subcommand's final
 * output through a reader that does not read for a while (so the pipe fills and turnguard
 * must wait), several runs, also while a CPU burner competes for the machine; compiled
 * binary and `bun main.ts`. Also: `run --outcome-json` keeps bounded memory on a huge
 * stdout, and terminal control sequences in agent text are escaped in `wait`/`log` output.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JournalWriter } from "../../lib/journal/writer.ts";
import { REPLY_CAPTURE_BYTES } from "../../lib/run/run.ts";
import { TurnRecorder } from "../../lib/retry/turn_recorder.ts";
import { ensureBinary } from "../helpers/binary.ts";
import { BUN, type Finished, homeEnv, MAIN, runProcess } from "../helpers/cli.ts";
import { capacityError, testOutcome } from "../helpers/outcome.ts";

let dir: string;
let binary: string;
let env: Record<string, string | undefined>;
let journal: string;

/** The two ways turnguard is run here: the compiled binary and the source under bun. */
const RUNTIMES = ["binary", "bun"] as const;

function argvOf(runtime: typeof RUNTIMES[number], args: string[]): string[] {
  return runtime === "binary" ? [binary, ...args] : [BUN, MAIN, ...args];
}

/**
 * Runs turnguard with a reader that reads nothing for `delay` seconds, then everything:
 * turnguard meets a full pipe and must still deliver every byte before it exits. The exit
 * code is turnguard's own (PIPESTATUS).
 */
function throughSlowReader(argv: string[], delay = 0.8): Promise<Finished> {
  return runProcess(
    ["bash", "-c", `"$@" | { sleep ${delay}; cat; }; exit "\${PIPESTATUS[0]}"`, "slow", ...argv],
    { env, cwd: dir },
  );
}

/** What `argv` writes to a regular file (never cut short): the reference output. */
async function toFile(argv: string[]): Promise<string> {
  const out = join(dir, "reference.out");
  await runProcess(["bash", "-c", `"$@" > "${out}"`, "ref", ...argv], { env, cwd: dir });
  return await Bun.file(out).text();
}

/** A process that keeps one core busy until killed. */
function cpuBurner(): ChildProcess {
  return spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" });
}

const agentOf = (bytes: number) => [
  "sh",
  "-c",
  `head -c ${bytes} /dev/zero | tr '\\0' 'a'`,
];

beforeAll(() => {
  binary = ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "tg-hostile-out-"));
  journal = join(dir, "journal.jsonl");
  env = homeEnv(dir, { TURNGUARD_JOURNAL: journal });
  // A journal with turns whose rows are large: `log --json` and `wait --json/--print`
  // write far more than a pipe holds.
  const recorder = new TurnRecorder({
    journal: new JournalWriter({ path: journal }),
    name: "big",
    policy: { retries: 0, maxWaitMs: 0 },
  });
  for (let turn = 1; turn <= 40; turn++) {
    const key = { session: "s-big", turn };
    recorder.started(key, { mode: "run", agent: "fake", promptId: null });
    const outcome = testOutcome("failed", `turn ${turn} start\n` + "r".repeat(70_000), {
      error: capacityError("UNAVAILABLE (code 503) " + "x".repeat(3_000)),
    });
    recorder.ended(key, 0, outcome, true);
  }
  // A log with many anchor hits: `scan --json` output is far larger than a pipe.
  const lines = [];
  for (let i = 0; i < 2_000; i++) {
    lines.push(`E1130 10:00:00.000000 1 x.go:1] RESOURCE_EXHAUSTED (code 429) line ${i}`);
  }
  writeFileSync(join(dir, "agent.log"), lines.join("\n") + "\n");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("every subcommand's output is complete through a slow reader", () => {
  for (const runtime of RUNTIMES) {
    test(`${runtime}: run --outcome-json, 3 runs, the last with a CPU burner`, async () => {
      for (let i = 0; i < 3; i++) {
        const burner = i === 2 ? cpuBurner() : null;
        try {
          const r = await throughSlowReader(
            argvOf(runtime, ["run", "--no-journal", "--outcome-json", "--", ...agentOf(300_000)]),
          );
          expect(r.code).toBe(0);
          const outcome = JSON.parse(r.stdout);
          expect(outcome.reply.chars).toBe(300_000);
          expect(outcome.reply.text).toBe("a".repeat(300_000));
        } finally {
          burner?.kill("SIGKILL");
        }
      }
    }, 60_000);

    test(`${runtime}: run pass-through of 1 MB, then turnguard exits`, async () => {
      const burner = cpuBurner();
      try {
        const r = await throughSlowReader(
          argvOf(runtime, ["run", "--no-journal", "--", ...agentOf(1_000_000)]),
        );
        expect(r.code).toBe(0);
        expect(r.stdout.length).toBe(1_000_000);
      } finally {
        burner.kill("SIGKILL");
      }
    }, 60_000);

    test(`${runtime}: scan --json, log --json, wait --json, wait --print`, async () => {
      const burner = cpuBurner();
      try {
        const scan = await throughSlowReader(
          argvOf(runtime, ["scan", "--agent", "agy", "--json", join(dir, "agent.log")]),
        );
        expect(scan.code).toBe(0);
        expect(scan.stdout.length).toBeGreaterThan(200_000);
        expect(JSON.parse(scan.stdout).findings.length).toBeGreaterThan(0);

        const log = await throughSlowReader(argvOf(runtime, ["log", "--json", "--limit", "40"]));
        expect(log.code).toBe(0);
        const rows = log.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
        expect(rows.length).toBe(40);
        expect(rows.at(-1).turn).toBe(40);

        const wait = await throughSlowReader(argvOf(runtime, ["wait", "big", "--json"]));
        expect(wait.code).toBe(1);
        const row = JSON.parse(wait.stdout);
        expect(row.turn).toBe(40);
        expect(row.reply.startsWith("turn 40 start\n")).toBe(true);
        expect(row.reply.length).toBe(65_536);

        const print = await throughSlowReader(argvOf(runtime, ["wait", "big", "--print"]));
        expect(print.code).toBe(1);
        expect(print.stdout.length).toBeGreaterThan(65_536 + 3_000);
        expect(print.stdout).toBe(await toFile(argvOf(runtime, ["wait", "big", "--print"])));
      } finally {
        burner.kill("SIGKILL");
      }
    }, 60_000);
  }

  test("binary: schema, help and log (text) arrive whole", async () => {
    const schema = await throughSlowReader([binary, "schema"]);
    expect(schema.code).toBe(0);
    expect(JSON.parse(schema.stdout).title).toBe("turnguard Outcome v1");
    const help = await throughSlowReader([binary, "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("turnguard");
    const log = await throughSlowReader([binary, "log", "--limit", "40"]);
    expect(log.code).toBe(0);
    expect(log.stdout.trimEnd().split("\n").length).toBeGreaterThanOrEqual(40);
  }, 60_000);
});

describe("run --outcome-json keeps memory bounded", () => {
  test("a 200 MB stdout: reply.text capped and said so, peak RSS bounded", async () => {
    const mb = 200;
    const r = await runProcess([
      "bash",
      "-c",
      `/usr/bin/time -f 'maxrss=%M' "$@" > "${dir}/out.json"; echo "exit=$?" >&2`,
      "rss",
      binary,
      "run",
      "--no-journal",
      "--outcome-json",
      "--",
      ...agentOf(mb * 1024 * 1024),
    ], { env, cwd: dir });
    expect(r.stderr).toContain("exit=0");
    const rssKb = Number(/maxrss=(\d+)/.exec(r.stderr)?.[1]);
    // Generous: the binary itself takes ~50 MB; holding the stdout would take 200+ MB more.
    expect(rssKb).toBeLessThan(180 * 1024);
    const outcome = JSON.parse(await Bun.file(join(dir, "out.json")).text());
    expect(outcome.reply.chars).toBe(mb * 1024 * 1024);
    expect(outcome.reply.capped).toBe(true);
    expect(outcome.reply.text.length).toBe(REPLY_CAPTURE_BYTES);
    expect(outcome.diagnostics.join("\n")).toContain("reply.capped");
  }, 120_000);

  test("a reply under the cap is whole and not marked", async () => {
    const r = await runProcess(
      [binary, "run", "--no-journal", "--outcome-json", "--", ...agentOf(1000)],
      { env, cwd: dir },
    );
    const outcome = JSON.parse(r.stdout);
    expect(outcome.reply.text.length).toBe(1000);
    expect("capped" in outcome.reply).toBe(false);
  });
});

/** ESC, BEL and CSI: none may reach a terminal raw. */
// deno-lint-ignore no-control-regex -- finding control characters is the point
const CONTROLS = /[\x1b\x07\x9b]/;

describe("terminal control sequences in agent text", () => {
  test("wait --print, the wait state line and log escape them; --json keeps JSON escapes", async () => {
    const path = join(dir, "ctl.jsonl");
    const recorder = new TurnRecorder({
      journal: new JournalWriter({ path }),
      name: "ctl",
      policy: { retries: 0, maxWaitMs: 0 },
    });
    const key = { session: "s-ctl", turn: 1 };
    recorder.started(key, { mode: "run", agent: "fake", promptId: null });
    const evil = "ok\x1b]0;pwned\x07 \x1b[2J\x9b31m line\rover\r\nend\ttab\n\u202eevil\x7f";
    recorder.ended(
      key,
      0,
      testOutcome("failed", evil, { error: capacityError("bad \x1b[31mred\x1b[0m") }),
      true,
    );
    const e = { ...env, TURNGUARD_JOURNAL: path };
    const print = await runProcess([binary, "wait", "ctl", "--print"], { env: e });
    expect(print.stdout).not.toMatch(CONTROLS);
    expect(print.stdout).toContain(
      "ok\\x1b]0;pwned\\x07 \\x1b[2J\\x9b31m line\\x0dover\r\nend\ttab",
    );
    expect(print.stdout).toContain("bad \\x1b[31mred\\x1b[0m");
    const state = await runProcess([binary, "wait", "ctl"], { env: e });
    expect(state.stdout + state.stderr).not.toMatch(CONTROLS);
    const log = await runProcess([binary, "log"], { env: e });
    expect(log.stdout).toContain("s-ctl");
    expect(log.stdout).not.toMatch(CONTROLS);
    const json = await runProcess([binary, "wait", "ctl", "--json"], { env: e });
    expect(JSON.parse(json.stdout).reply).toBe(evil);
    // JSON.stringify leaves DEL, C1 and bidirectional controls raw: they are \u-escaped.
    expect(json.stdout).not.toMatch(/[\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
    expect(json.stdout).toContain("\\u009b31m");
  });

  test("scan and explain escape them in the log lines they quote", async () => {
    const log = join(dir, "ctl.log");
    writeFileSync(
      log,
      "E1130 10:00:00.000000 1 log.go:398] agent executor error: RESOURCE_EXHAUSTED " +
        "(code 429) \x1b]0;pwned\x07 \x1b[2J\u202eevil\n",
    );
    for (
      const args of [["scan", log], ["explain", "--kind", "log", readFileSync(log, "utf8")]]
    ) {
      const r = await runProcess([binary, ...args], { env });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("RESOURCE_EXHAUSTED (code 429) \\x1b]0;pwned\\x07");
      expect(r.stdout + r.stderr).not.toMatch(CONTROLS);
      expect(r.stdout).not.toContain("\u202e");
    }
  });
});
