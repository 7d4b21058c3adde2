/**
 * Session records benchmark: what reading a turn's session records costs a clean turn
 * (besides the profile's settle window, which the response waits out as it is): the
 * snapshot at the prompt, then the read, parse, readers and fold of what the turn appended,
 * on a Claude Code transcript that gains about 250 KB per turn (as a real one does) among
 * 200 other sessions' files. Prints a markdown table; `make bench` records it.
 */
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { embeddedConfig, mergeConfigs } from "../lib/config/config.ts";
import { builtinPlugins } from "../lib/config/packs.ts";
import { foldRecordEvents, readRecordEvents } from "../lib/cause/record_evidence.ts";
import { profileReaders } from "../lib/config/registry.ts";
import { readSessionRecords, snapshotSessionRecords } from "../lib/cause/session_records.ts";

const ROOT = resolve(import.meta.dirname ?? ".", "..");

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

const home = mkdtempSync(join(tmpdir(), "tg-bench-records-"));
try {
  const profile = mergeConfigs([embeddedConfig()]).profiles.get("claude")!;
  const readers = profileReaders(builtinPlugins().readers, profile);
  const env = { HOME: home };
  const projects = join(home, ".claude", "projects");
  for (let i = 0; i < 200; i++) {
    mkdirSync(join(projects, `-work-p${i}`), { recursive: true });
    writeFileSync(join(projects, `-work-p${i}`, `other-${i}.jsonl`), "{}\n".repeat(1000));
  }
  const session = "97d0e0b6-e8d1-4236-b378-0a94cc473a70";
  const file = join(projects, "-work-p7", `${session}.jsonl`);
  const turn = readFileSync(join(ROOT, "tests/fixtures/records/claude-agent-acp-ok.jsonl"), "utf8");
  const appended = turn.repeat(Math.ceil(250_000 / turn.length));
  writeFileSync(file, appended);
  const snapshots: number[] = [];
  const reads: number[] = [];
  for (let i = 0; i < 30; i++) {
    let t = performance.now();
    const taken = snapshotSessionRecords(profile, env, session, Date.now());
    snapshots.push(performance.now() - t);
    appendFileSync(file, appended);
    t = performance.now();
    const read = await readSessionRecords(taken, Date.now() - 1000);
    foldRecordEvents(readRecordEvents(read.records, readers, []));
    reads.push(performance.now() - t);
  }
  const row = (what: string, xs: number[]) =>
    `| ${what} | ${percentile(xs, 50).toFixed(1)} | ${percentile(xs, 99).toFixed(1)} |`;
  console.log("| measure (claude profile, 200 other sessions' files) | p50 ms | p99 ms |");
  console.log("| --- | --- | --- |");
  console.log(row("snapshot at the prompt", snapshots));
  console.log(row(`read + parse + readers + fold of ${appended.length} appended bytes`, reads));
  console.log(
    `| settle window (waited as it is) | ${profile.recordsSettleMs} | ${profile.recordsSettleMs} |`,
  );
} finally {
  rmSync(home, { recursive: true, force: true });
}
