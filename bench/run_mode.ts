/**
 * Run-mode benchmark: what `turnguard run` adds to a turn, and how long the log scan takes
 * on a crowded log directory. Prints a markdown table; `make bench` records it.
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as v from "valibot";
import { embeddedConfig, mergeConfigs, type Profile } from "../lib/config/config.ts";
import { findLogCause, readTurnLogs, snapshotProfileLogs } from "../lib/cause/log_cause.ts";
import { buildClassifier } from "../lib/cause/classifier.ts";
import { AnchorSchema } from "../lib/plugin/api.ts";
import { builtinPlugins } from "../lib/config/packs.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..");
const BIN = join(ROOT, "dist", "turnguard");

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

function timeRuns(argv: string[], runs: number, env: Record<string, string>): number[] {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    spawnSync(argv[0], argv.slice(1), { env: { ...process.env, ...env }, stdio: "ignore" });
    times.push(performance.now() - t);
  }
  return times;
}

const home = mkdtempSync(join(tmpdir(), "tg-bench-"));
try {
  const env = { HOME: home };
  const direct = timeRuns(["/bin/true"], 30, env);
  const wrapped = timeRuns([BIN, "run", "--agent", "agy", "--", "/bin/true"], 30, env);

  // A crowded agy log directory: 200 files of 1 MiB, 20 of which grow during the turn.
  const dir = join(home, ".gemini", "antigravity-cli", "log");
  spawnSync("mkdir", ["-p", dir]);
  const line = "I0707 08:34:23.910604  84 agent.go:42] routine progress line for the benchmark\n";
  const mib = line.repeat(Math.ceil((1 << 20) / line.length));
  for (let i = 0; i < 200; i++) writeFileSync(join(dir, `cli-${i}.log`), mib);
  const profile: Profile = {
    name: "agy",
    match: ["agy"],
    logs: ["$HOME/.gemini/antigravity-cli/log/cli-*.log"],
    logFormat: "glog",
    anchors: null,
  };
  const classifier = buildClassifier([
    ...builtinPlugins().anchors,
    ...mergeConfigs([embeddedConfig()]).declarativeAnchors.map((a) => v.parse(AnchorSchema(), a)),
  ]);
  const scanTimes: number[] = [];
  for (let r = 0; r < 10; r++) {
    const t0 = performance.now();
    const snapshot = snapshotProfileLogs(profile, env, Date.now());
    const snapMs = performance.now() - t0;
    for (let i = 0; i < 20; i++) appendFileSync(join(dir, `cli-${i}.log`), mib.slice(0, 300_000));
    const t1 = performance.now();
    const result = findLogCause({
      snapshot,
      scan: await readTurnLogs(profile, snapshot, Date.now()),
      pid: 84,
      profile,
      classifier,
      now: Date.now(),
    });
    if (result.cause) throw new Error("benchmark log must be clean");
    scanTimes.push(snapMs + performance.now() - t1);
  }
  const f = (n: number) => n.toFixed(1);
  console.log("| measure | p50 ms | p99 ms |");
  console.log("| --- | --- | --- |");
  console.log(
    `| \`/bin/true\` alone (30 runs) | ${f(percentile(direct, 50))} | ${
      f(percentile(direct, 99))
    } |`,
  );
  console.log(
    `| \`dist/turnguard run --agent agy -- /bin/true\` (30 runs) | ${
      f(percentile(wrapped, 50))
    } | ${f(percentile(wrapped, 99))} |`,
  );
  console.log(
    `| snapshot + scan: 200 logs of 1 MiB, 20 grew by 300 KB (10 runs) | ${
      f(percentile(scanTimes, 50))
    } | ${f(percentile(scanTimes, 99))} |`,
  );
} finally {
  rmSync(home, { recursive: true, force: true });
}
