/**
 * `turnguard retry` signals only the process that owns the retry: a pid reused by another
 * process is never signalled, and a turnguard done with its retries survives a late signal.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JournalRecord } from "../../lib/journal/records.ts";
import { JournalWriter } from "../../lib/journal/writer.ts";
import type { Outcome } from "../../lib/core/outcome.ts";
import { processStart } from "../../lib/journal/process_identity.ts";
import { RETRY_EXIT, retryAction } from "../../lib/cli/retry.ts";
import { BUN, DENO, ROOT, runProcess, turnguard } from "../helpers/cli.ts";
import { capacityError, testOutcome } from "../helpers/outcome.ts";

let home: string;
let journal: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tg-retry-owner-"));
  journal = join(home, "journal.jsonl");
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const env = () => ({
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  TURNGUARD_CONFIG: undefined,
  TURNGUARD_JOURNAL: journal,
});

const failed: Outcome = testOutcome("failed", "", { error: capacityError("overloaded") });

/** A failed turn of `pid` whose retry 1 of 1 waits 100 s. */
function waitingRetry(pid: number, pidStart: string | undefined): void {
  const common = {
    ts: new Date().toISOString(),
    name: "w1",
    session: "s1",
    turn: 1,
    pid,
    ...(pidStart === undefined ? {} : { pidStart }),
  };
  const records: JournalRecord[] = [
    { ...common, event: "turn_started", mode: "run", agent: "fake", promptId: null },
    {
      ...common,
      event: "retry_scheduled",
      attempt: 1,
      of: 1,
      afterMs: 100_000,
      nextAt: new Date(Date.now() + 100_000).toISOString(),
      reason: "capacity",
    },
    { ...common, event: "turn_ended", attempt: 0, outcome: failed },
  ];
  const w = new JournalWriter({ path: journal });
  for (const r of records) w.append(r);
}

/** A live process that is not turnguard: SIGUSR1 kills it. */
function stranger() {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  const exited = new Promise<string | null>((r) => child.on("exit", (_c, sig) => r(sig)));
  return { pid: child.pid!, exited, kill: () => child.kill("SIGKILL") };
}

describe("retryAction", () => {
  const r = {
    state: "waiting" as const,
    attempt: 1,
    of: 2,
    afterMs: 1000,
    nextAt: "2026-01-01T00:00:00.000Z",
    reason: "capacity",
    pid: 4242,
    pidStart: "99",
    pidSpace: undefined,
  };
  const gone: ReturnType<typeof retryAction> = {
    kind: "refuse",
    message:
      "retry: the process that owned retry 1 of 2 for w1 (pid 4242) is gone; it will not run",
    exitCode: 5,
  };
  // [owner, ms late, action]
  const rows: Array<[Parameters<typeof retryAction>[1], number, ReturnType<typeof retryAction>]> = [
    ["alive", -5000, { kind: "signal" }],
    ["alive", 300_000, { kind: "signal" }], // verified: it is the owner, however late
    ["unverified", -5000, { kind: "signal" }],
    ["unverified", 300_000, {
      kind: "refuse",
      message: "retry: retry 1 of 2 for w1 was due 5m ago and never started; " +
        "its process (pid 4242) is likely gone",
      exitCode: 5,
    }],
    ["gone", -5000, gone],
    ["elsewhere", -5000, {
      kind: "refuse",
      message: "retry: the process that owns retry 1 of 2 for w1 (pid 4242) runs on another " +
        "host or in another pid namespace; run turnguard retry there",
      exitCode: 1,
    }],
  ];
  for (const [owner, late, want] of rows) {
    test(`${owner}, ${late} ms late`, () => {
      expect(retryAction(r, owner, late, "w1")).toEqual(want);
    });
  }
  test("owner gone has its own exit code", () => {
    expect(RETRY_EXIT).toEqual({ ok: 0, noRetry: 1, usage: 2, noSession: 4, ownerGone: 5 });
  });
});

describe("turnguard retry checks the owner before it signals", () => {
  test("a pid now used by another process is not signalled: exit 5, one line", async () => {
    const other = stranger();
    try {
      waitingRetry(other.pid, "1"); // the owner started at tick 1; this process did not
      const r = await turnguard(["retry", "w1"], { env: env() });
      expect([r.code, r.stdout, r.stderr]).toEqual([
        5,
        "",
        `turnguard: retry: the process that owned retry 1 of 1 for w1 (pid ${other.pid}) is gone; it will not run\n`,
      ]);
      const sig = await Promise.race([
        other.exited,
        new Promise((r) => setTimeout(r, 300, "alive")),
      ]);
      expect(sig).toBe("alive");
    } finally {
      other.kill();
    }
  }, 60_000);

  test("the owner itself (start time matches) is signalled", async () => {
    const other = stranger();
    try {
      waitingRetry(other.pid, processStart(other.pid));
      const r = await turnguard(["retry", "w1"], { env: env() });
      expect([r.code, r.stdout]).toEqual([
        0,
        `w1: retry 1 of 1 runs now (signalled pid ${other.pid})\n`,
      ]);
      expect(await other.exited).toBe("SIGUSR1"); // sleep has no handler: proof it was signalled
    } finally {
      other.kill();
    }
  }, 60_000);

  test("an owner that exited: exit 5", async () => {
    let pid = 0;
    await runProcess(["true"], { onSpawn: (c) => (pid = c.pid!) });
    waitingRetry(pid, "12345");
    const r = await turnguard(["retry", "w1"], { env: env() });
    expect([r.code, r.stderr]).toEqual([
      5,
      `turnguard: retry: the process that owned retry 1 of 1 for w1 (pid ${pid}) is gone; it will not run\n`,
    ]);
  }, 60_000);
});

describe("a process done with its retries survives a late SIGUSR1", () => {
  const GUARDED = join(ROOT, "tests", "fixtures", "retry", "guarded.ts");
  for (const runtime of ["bun", "deno"] as const) {
    test(runtime, async () => {
      const argv = runtime === "bun" ? [BUN, GUARDED] : [DENO, "run", "-A", GUARDED];
      const r = await runProcess(argv, {
        onSpawn: (c) =>
          c.stdout!.on("data", (chunk: Buffer) => {
            if (chunk.toString().includes("ready")) c.kill("SIGUSR1");
          }),
      });
      expect([r.signal, r.code, r.stdout]).toEqual([null, 0, "ready\nstill here\n"]);
    }, 60_000);
  }
});
