/**
 * Journal-read benchmark: `turnguard wait NAME --json` and `turnguard log --limit 10` on a
 * 100k-record journal, on the compiled binary, against floors measured in the same run —
 * `tail -n 10` of the same file, and an empty compiled Bun program (what any compiled
 * turnguard command costs before it reads a byte), and `turnguard --help` (its own start).
 * Prints min/median/max of CPU and wall time and peak memory, and the ratios to the floors
 * (by CPU time: on a loaded machine wall time measures the machine). `--quick`: a small
 * journal, few runs; `--before PATH`: an earlier build measured alongside.
 *
 * Run it with `make build && node_modules/.bin/bun bench/journal_read.ts`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { arch, cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { formatRecord, type JournalRecord } from "../lib/journal/records.ts";
import type { Outcome } from "../lib/core/outcome.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..");
const BIN = join(ROOT, "dist", "turnguard");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const QUICK = process.argv.includes("--quick");
const RECORDS = QUICK ? 5_000 : 100_000;
const RUNS = QUICK ? 5 : 21;
/** `--before PATH`: an earlier compiled turnguard measured alongside. */
const BEFORE = process.argv.includes("--before")
  ? process.argv[process.argv.indexOf("--before") + 1]
  : undefined;

/** One run's figures. */
interface Sample {
  wallMs: number;
  cpuMs: number;
  rssMiB: number;
}

/** What Bun.spawnSync tells of a finished child (its rusage, CPU time in µs). */
interface Spawned {
  exitCode: number | null;
  stderr: Uint8Array;
  resourceUsage: { cpuTime: { total: bigint } };
}
/** Bun's spawnSync: the child's own CPU time, to the microsecond (a loaded machine's wall
 * time says more about the machine than about the command). */
const bunSpawnSync = (globalThis as unknown as {
  Bun: { spawnSync(argv: string[], opts: object): Spawned };
}).Bun.spawnSync;

/** GNU time writes the child's peak RSS (KiB) here. */
let timeFile = "";

function run(argv: string[], env: Record<string, string>): Sample {
  const t = performance.now();
  const r = bunSpawnSync(argv, { env: { ...process.env, ...env }, stdout: "ignore" });
  const wallMs = performance.now() - t;
  if (r.exitCode !== 0 && r.exitCode !== 1) {
    throw new Error(`${argv.join(" ")}: exit ${r.exitCode}: ${new TextDecoder().decode(r.stderr)}`);
  }
  spawnSync("/usr/bin/time", ["-f", "%M", "-o", timeFile, ...argv], {
    env: { ...process.env, ...env },
    stdio: "ignore",
  });
  const kib = Number(readFileSync(timeFile, "utf8").trim());
  return { wallMs, cpuMs: Number(r.resourceUsage.cpuTime.total) / 1000, rssMiB: kib / 1024 };
}

function stats(xs: number[]): { min: number; median: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)], max: s[s.length - 1] };
}

/** Runs each command RUNS times, interleaved so that load on the machine hits all alike. */
function measure(cmds: Record<string, string[]>, env: Record<string, string>) {
  const samples: Record<string, Sample[]> = {};
  for (const name of Object.keys(cmds)) samples[name] = [];
  for (const argv of Object.values(cmds)) run(argv, env); // warm the page cache
  for (let i = 0; i < RUNS; i++) {
    for (const [name, argv] of Object.entries(cmds)) samples[name].push(run(argv, env));
  }
  return samples;
}

/** A journal of `count` records: 50 sessions of two writers, turns that end ok or failed. */
function buildJournal(path: string, count: number): void {
  const lines: string[] = [];
  const t0 = Date.UTC(2026, 0, 1);
  let turn = 0;
  while (lines.length < count) {
    turn++;
    const session = `sess-${turn % 50}`;
    const common = {
      ts: new Date(t0 + lines.length * 1000).toISOString(),
      name: `agent-${turn % 50}`,
      session,
      turn: Math.ceil(turn / 50),
      pid: 4000 + (turn % 2),
      pidStart: "123456",
      writer: `writer-${turn % 2}`,
    };
    lines.push(formatRecord({
      ...common,
      event: "turn_started",
      mode: "proxy",
      agent: "claude",
      promptId: turn,
    }));
    const failed = turn % 7 === 0;
    const outcome: Outcome = {
      v: 1,
      mode: "proxy",
      agent: "claude",
      session,
      turn: common.turn,
      startedAt: common.ts,
      endedAt: common.ts,
      durationMs: 1234,
      status: failed ? "failed" : "ok",
      stopReason: failed ? null : "end_turn",
      exit: { code: null, signal: null },
      error: failed
        ? {
          code: 503,
          message: "UNAVAILABLE (code 503): The model is overloaded.",
          category: "capacity",
          anchor: "provider.503",
          source: null,
        }
        : null,
      retry: null,
      reply: { chars: 120, text: `reply of turn ${turn}: `.padEnd(120, "x") },
      publish: null,
      diagnostics: [],
    };
    const ended: JournalRecord = { ...common, event: "turn_ended", attempt: 0, outcome };
    lines.push(formatRecord(ended));
  }
  writeFileSync(path, lines.slice(0, count).join(""));
}

if (!existsSync(BIN)) {
  console.error(`bench/journal_read.ts: no ${BIN}; run make build first`);
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), "tg-bench-journal-"));
try {
  const journal = join(dir, "journal.jsonl");
  buildJournal(journal, RECORDS);
  const empty = join(dir, "empty");
  writeFileSync(join(dir, "empty.ts"), "");
  const built = spawnSync(BUN, [
    "build",
    "--compile",
    "--minify",
    join(dir, "empty.ts"),
    "--outfile",
    empty,
  ]);
  if (built.status !== 0) throw new Error(`cannot build the empty program: ${built.stderr}`);
  timeFile = join(dir, "time.txt");
  const env = { HOME: dir, TURNGUARD_JOURNAL: journal };
  const samples = measure({
    "tail -n 10 (floor)": ["tail", "-n", "10", journal],
    "empty compiled Bun program (floor)": [empty],
    "turnguard --help (start-up only)": [BIN, "--help"],
    "turnguard wait NAME --json": [BIN, "wait", "agent-7", "--json"],
    "turnguard log --limit 10": [BIN, "log", "--limit", "10"],
    // An earlier build to compare with (e.g. one that reads the whole journal).
    ...(BEFORE
      ? {
        "before: turnguard wait NAME --json": [BEFORE, "wait", "agent-7", "--json"],
        "before: turnguard log --limit 10": [BEFORE, "log", "--limit", "10"],
      }
      : {}),
  }, env);
  const size = statSync(journal).size / (1 << 20);
  const runtime = (globalThis as { Bun?: { version: string } }).Bun?.version ?? "?";
  console.log(
    `machine: nproc ${cpus().length}, ${arch()}, ${cpus()[0]?.model ?? "?"}; bun ${runtime}; ` +
      `${new Date().toISOString().slice(0, 10)}`,
  );
  console.log(
    `journal: ${RECORDS} records, ${size.toFixed(1)} MiB, one file; ${RUNS} runs each\n`,
  );
  console.log(
    "| command | CPU ms min / median / max | wall ms min / median / max | peak RSS MiB |",
  );
  console.log("|---|---:|---:|---:|");
  const medians: Record<string, number> = {};
  const f = (x: { min: number; median: number; max: number }) =>
    `${x.min.toFixed(1)} / ${x.median.toFixed(1)} / ${x.max.toFixed(1)}`;
  for (const [name, xs] of Object.entries(samples)) {
    const w = stats(xs.map((x) => x.wallMs));
    const c = stats(xs.map((x) => x.cpuMs));
    const m = stats(xs.map((x) => x.rssMiB));
    medians[name] = c.median;
    console.log(`| ${name} | ${f(c)} | ${f(w)} | ${m.median.toFixed(1)} |`);
  }
  const floor = medians["empty compiled Bun program (floor)"];
  const tail = medians["tail -n 10 (floor)"];
  const start = medians["turnguard --help (start-up only)"];
  console.log(
    "\n| command | median CPU ms | × empty program | × tail -n 10 | " +
      "journal work (− --help) ms | goal ≤ 20 ms |",
  );
  console.log("|---|---:|---:|---:|---:|---|");
  for (const name of Object.keys(medians).filter((n) => n.includes("turnguard "))) {
    if (name.includes("--help")) continue;
    const ms = medians[name];
    console.log(
      `| ${name} | ${ms.toFixed(1)} | ${(ms / floor).toFixed(2)} | ${(ms / tail).toFixed(2)} | ` +
        `${(ms - start).toFixed(1)} | ${ms <= 20 ? "met" : "not met"} |`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
