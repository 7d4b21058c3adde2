/**
 * Smoke version of bench/journal_read.ts: `wait` and `log` on a long journal read only its
 * end. Checked without timing: a corrupt line near the start is never reported (it was
 * never read), while the answers are right. A generous CPU-time check against the same
 * commands on a short journal catches a gross regression (a read of the whole journal
 * parses tens of thousands of records).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatRecord } from "../../lib/journal/records.ts";
import { BUN, MAIN } from "../helpers/cli.ts";
import { testOutcome } from "../helpers/outcome.ts";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tg-read-smoke-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A journal of `turns` turns over 20 sessions, a corrupt line after its first record. */
function journal(name: string, turns: number): string {
  const lines: string[] = [];
  for (let t = 1; t <= turns; t++) {
    const common = {
      ts: new Date(Date.UTC(2026, 0, 1) + t * 1000).toISOString(),
      name: `agent-${t % 20}`,
      session: `sess-${t % 20}`,
      turn: Math.ceil(t / 20),
      pid: 1,
      writer: "w",
    };
    lines.push(formatRecord({
      ...common,
      event: "turn_started",
      mode: "proxy",
      agent: "a",
      promptId: t,
    }));
    lines.push(formatRecord({
      ...common,
      event: "turn_ended",
      attempt: 0,
      outcome: testOutcome("ok", `reply ${t}`),
    }));
    if (t === 1) lines.push("a corrupt line near the start\n");
  }
  const path = join(dir, name);
  writeFileSync(path, lines.join(""));
  return path;
}

/** Runs turnguard from source; its output and CPU time (µs precision, load-independent). */
function cpuRun(
  args: string[],
): { code: number | null; stdout: string; stderr: string; ms: number } {
  const r = (globalThis as unknown as {
    Bun: {
      spawnSync(argv: string[], o: object): {
        exitCode: number | null;
        stdout: Uint8Array;
        stderr: Uint8Array;
        resourceUsage: { cpuTime: { total: bigint } };
      };
    };
  }).Bun.spawnSync([BUN, MAIN, ...args], { env: { ...process.env, HOME: dir } });
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    code: r.exitCode,
    stdout: text(r.stdout),
    stderr: text(r.stderr),
    ms: Number(r.resourceUsage.cpuTime.total) / 1000,
  };
}

describe("wait and log on a long journal read only its end", () => {
  test("the answers are right, and the start of the journal is never read", () => {
    const long = journal("long.jsonl", 25_000);
    const wait = cpuRun(["wait", "agent-7", "--json", "--journal", long]);
    expect([wait.code, wait.stderr]).toEqual([0, ""]);
    expect(JSON.parse(wait.stdout)).toMatchObject({
      session: "sess-7",
      turn: 1250,
      status: "ok",
      reply: "reply 24987",
    });
    const log = cpuRun(["log", "--limit", "3", "--journal", long]);
    expect([log.code, log.stderr]).toEqual([0, ""]);
    expect(log.stdout.trim().split("\n").map((l) => l.split(/\s+/).slice(1, 4).join(" ")))
      .toEqual(["agent-18 sess-18 #1250", "agent-19 sess-19 #1250", "agent-0 sess-0 #1250"]);
    // A whole read reports the corrupt line: the check above can fail.
    const all = cpuRun(["log", "--limit", "100000", "--journal", long]);
    expect(all.stderr).toContain("skipped a corrupt line");
  }, 120_000);

  test("CPU time barely grows with the journal's length (generous bound)", () => {
    const short = journal("short.jsonl", 50);
    const long = journal("long2.jsonl", 25_000);
    const best = (args: string[]) => Math.min(...[0, 1, 2].map(() => cpuRun([...args]).ms));
    for (const cmd of [["wait", "agent-7", "--json"], ["log", "--limit", "10"]]) {
      const small = best([...cmd, "--journal", short]);
      const big = best([...cmd, "--journal", long]);
      expect(big).toBeLessThan(2 * small + 300);
    }
  }, 120_000);
});
