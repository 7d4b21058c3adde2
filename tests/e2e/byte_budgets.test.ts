/**
 * Byte budgets of the proxy, measured on the compiled binary: what a client controls
 * (prompt sizes, request ids, how many it sends) must not grow turnguard's memory without
 * bound. Each test feeds a proxy in front of an agent that reads everything and answers
 * nothing, then reads the proxy's resident memory (VmRSS, /proc) against a generous bound
 * that the unbudgeted proxy exceeds several times over.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";

const binary = process.env.TG_BUDGET_BINARY ?? ensureBinary();
const dir = mkdtempSync(join(tmpdir(), "tg-budgets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, "anchors.toml");
writeFileSync(config, `[agent.deaf]\nmatch = ["deaf"]\n`);

const MiB = 1024 * 1024;

/** VmRSS of a process, in MiB. */
function rssMiB(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return Number(m![1]) / 1024;
}

/** A proxy in front of an agent that reads its input and never answers. */
function deafProxy(extra: string[]): { child: ChildProcess; stderr: () => string } {
  const child = spawn(binary, [
    "proxy",
    "--config",
    config,
    "--agent",
    "deaf",
    "--no-journal",
    "--verbose",
    ...extra,
    "--",
    "sh",
    "-c",
    "cat >/dev/null",
  ], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, HOME: dir } });
  let err = "";
  child.stderr!.on("data", (c: Uint8Array) => err += new TextDecoder().decode(c));
  child.stdout!.resume();
  return { child, stderr: () => err };
}

/** Writes `line` to the proxy, waiting while its input pipe is full. */
function send(child: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve) => {
    if (child.stdin!.write(line)) resolve();
    else child.stdin!.once("drain", () => resolve());
  });
}

async function until(what: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}

const prompt = (i: number, text: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: i,
    method: "session/prompt",
    params: { sessionId: `s${i}`, prompt: [{ type: "text", text }] },
  }) + "\n";

/** Sends `n` prompts of `size` bytes in `n` sessions; the proxy's RSS growth, in MiB. */
async function promptsGrowth(extra: string[], n: number, size: number): Promise<number> {
  const p = deafProxy(extra);
  try {
    await send(p.child, prompt(0, "hello"));
    await until(() => p.stderr().includes("session s0 turn 1: started"));
    const base = rssMiB(p.child.pid!);
    const text = "a".repeat(size);
    for (let i = 1; i <= n; i++) await send(p.child, prompt(i, text));
    await until(() => p.stderr().includes(`session s${n} turn 1: started`));
    await new Promise((r) => setTimeout(r, 500));
    return rssMiB(p.child.pid!) - base;
  } finally {
    p.child.kill("SIGKILL");
  }
}

describe("prompt copies", () => {
  // Prompts of 4 MiB waiting on a slow agent: 160 MiB, then 240 MiB of copies if each
  // were kept. (Measured on the unbudgeted binary with 24 and 40 prompts: growth 121 and
  // 185 MiB, about 1.2 MiB a prompt over its 4 MiB. Budgeted, RSS noise from when the
  // runtime collects: 17–54 MiB without --retries, 74–139 with, the copies' 64 MiB in it:
  // 139 once failed the bound this test had, 64 + 75. So more prompts, for a margin on
  // both sides: the bounds sit about 100 MiB under what keeping every copy would take.)
  test("without --retries no prompt is copied: memory stays flat", async () => {
    const growth = await promptsGrowth([], 40, 4 * MiB);
    expect(growth).toBeLessThan(100);
  }, 120_000);

  test("with --retries the copies stay within their 64 MiB budget", async () => {
    const growth = await promptsGrowth(["--retries", "1"], 60, 4 * MiB);
    expect(growth).toBeLessThan(64 + 100);
  }, 120_000);
});

describe("requests in flight", () => {
  // 100 requests with 1 MiB string ids to an agent that never answers: 100 MiB of ids,
  // each kept three ways, if only their number were capped.
  test("the cap counts their bytes: past 64 MiB of ids, requests are refused", async () => {
    const p = deafProxy([]);
    try {
      const id = (i: number) => `${i}-` + "i".repeat(MiB);
      await send(p.child, prompt(0, "hello"));
      await until(() => p.stderr().includes("session s0 turn 1: started"));
      const base = rssMiB(p.child.pid!);
      for (let i = 1; i <= 100; i++) {
        await send(
          p.child,
          JSON.stringify({ jsonrpc: "2.0", id: id(i), method: "x/slow", params: {} }) + "\n",
        );
      }
      // The last one is refused too (the log line names the start of its id).
      await until(() => p.stderr().includes("100-iiii"), 120_000);
      await new Promise((r) => setTimeout(r, 500));
      const growth = rssMiB(p.child.pid!) - base;
      expect(growth).toBeLessThan(150);
    } finally {
      p.child.kill("SIGKILL");
    }
  }, 180_000);
});
