import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readJournal } from "../../lib/journal/reader.ts";
import { pidSpace, processStart } from "../../lib/journal/process_identity.ts";
import { ROOT, turnguard } from "../helpers/cli.ts";

const FLAKY = join(ROOT, "tests", "fixtures", "retry", "flaky-agent");
const OVERLOADED = "UNAVAILABLE (code 503): The model is overloaded.";

let home: string;
let journal: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tg-retry-"));
  journal = join(home, "journal.jsonl");
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const env = (plan: string) => ({
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  TURNGUARD_CONFIG: undefined,
  TURNGUARD_JOURNAL: journal,
  FLAKY_COUNTER: join(home, "counter"),
  FLAKY_PLAN: plan,
});
const runs = () => Number(readFileSync(join(home, "counter"), "utf8"));

/** The journal as `event attempt detail` strings. */
function events(): string[] {
  const read = readJournal(journal);
  expect(read.diagnostics).toEqual([]);
  return read.records.map((r) => {
    switch (r.event) {
      case "turn_started":
        return `turn_started ${r.mode} ${r.name}`;
      case "turn_ended":
        return `turn_ended ${r.attempt} ${r.outcome.status}`;
      case "retry_scheduled":
        return `retry_scheduled ${r.attempt}/${r.of} ${r.reason}`;
      case "retry_started":
        return `retry_started ${r.attempt}/${r.of}`;
      case "retry_settled":
        return `retry_settled ${r.attempt}/${r.of} ${r.why}: ${r.reason}`;
      case "agent_attempt":
        return `agent_attempt ${r.n} ${r.category}`;
      case "turn_revised":
        return `turn_revised ${r.attempt} ${r.outcome.status}`;
    }
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}
const scheduled = () =>
  existsSync(journal) && readFileSync(journal, "utf8").includes("retry_scheduled");

describe("turnguard run --retries", () => {
  test(
    "fails twice with capacity, then succeeds: one answer, exit 0, every step journaled",
    async () => {
      const r = await turnguard(["run", "--name", "w1", "--retries", "2", "--", FLAKY], {
        env: env("hint,hint,ok"),
      });
      expect([r.code, r.stdout]).toEqual([0, "the answer\n"]);
      expect(runs()).toBe(3);
      expect(r.stderr).toBe(
        `${OVERLOADED} Please retry in 0.2s.\n` +
          "turnguard: retry 1 of 2 waits out capacity; it runs in 200ms (turnguard retry w1 runs it now)\n" +
          `${OVERLOADED} Please retry in 0.2s.\n` +
          "turnguard: retry 2 of 2 waits out capacity; it runs in 200ms (turnguard retry w1 runs it now)\n",
      );
      expect(events()).toEqual([
        "turn_started run w1",
        "retry_scheduled 1/2 capacity",
        "turn_ended 0 failed",
        "retry_started 1/2",
        "retry_scheduled 2/2 capacity",
        "turn_ended 1 failed",
        "retry_started 2/2",
        "retry_settled 2/2 succeeded: retry 2 of 2 succeeded",
        "turn_ended 2 ok",
      ]);
      const scheduledAfter = readJournal(journal).records.flatMap((x) =>
        x.event === "retry_scheduled" ? [x.afterMs] : []
      );
      expect(scheduledAfter).toEqual([200, 200]); // the hint is honoured
      const w = await turnguard(["wait", "w1", "--print"], { env: env("") });
      expect([w.code, w.stdout]).toEqual([0, "the answer\n"]);
    },
    60_000,
  );

  test("without a hint: exponential backoff with jitter, capped by --retry-max-wait", async () => {
    const r = await turnguard(
      ["run", "--retries", "1", "--retry-max-wait", "0.4", "--", FLAKY],
      { env: env("capacity,ok") },
    );
    expect([r.code, r.stdout]).toEqual([0, "the answer\n"]);
    const [rec] = readJournal(journal).records.filter((x) => x.event === "retry_scheduled");
    const afterMs = rec.event === "retry_scheduled" ? rec.afterMs : -1;
    expect(afterMs).toBeGreaterThanOrEqual(200);
    expect(afterMs).toBeLessThanOrEqual(400);
  }, 60_000);

  test("a failure after output was streamed is never retried", async () => {
    const r = await turnguard(["run", "--name", "w1", "--retries", "3", "--", FLAKY], {
      env: env("partial,ok"),
    });
    expect([r.code, r.stdout, runs()]).toEqual([1, "partial answer", 1]);
    expect(events()).toEqual([
      "turn_started run w1",
      "retry_settled 0/3 not_retryable: output was already sent, so capacity is not retried",
      "turn_ended 0 failed",
    ]);
  }, 60_000);

  test("an auth failure is never retried", async () => {
    const r = await turnguard(["run", "--name", "w1", "--retries", "3", "--", FLAKY], {
      env: env("auth,ok"),
    });
    expect([r.code, r.stdout, runs()]).toEqual([1, "", 1]);
    expect(events()).toEqual([
      "turn_started run w1",
      "retry_settled 0/3 not_retryable: auth is not retryable",
      "turn_ended 0 failed",
    ]);
  }, 60_000);

  test("retries run out: the last failure stands, exit 1", async () => {
    const r = await turnguard(["run", "--name", "w1", "--retries", "1", "--", FLAKY], {
      env: env("hint"),
    });
    expect([r.code, runs()]).toEqual([1, 2]);
    expect(events().slice(-2)).toEqual([
      "retry_settled 1/1 exhausted: 1 of 1 retries used",
      "turn_ended 1 failed",
    ]);
    const w = await turnguard(["wait", "w1", "--print"], { env: env("") });
    expect(w.stdout).toBe(
      `w1  ready: turn failed\nerror: ${OVERLOADED} Please retry in 0.2s.\nno retry waits (1 of 1 retries used)\n`,
    );
  }, 60_000);

  for (const runtime of ["bun", "deno"] as const) {
    test(`turnguard retry NAME makes a waiting retry run now (${runtime})`, async () => {
      let pid = 0;
      const run = turnguard(
        ["run", "--name", "w1", "--retries", "1", "--retry-max-wait", "200", "--", FLAKY],
        { env: env("longhint,ok"), runtime, onSpawn: (c) => (pid = c.pid!) },
      );
      await until(scheduled, "the retry to be scheduled");
      const w = await turnguard(["wait", "w1", "--print"], { env: env("") });
      expect(w.code).toBe(1);
      expect(w.stdout).toMatch(
        new RegExp(
          `^w1  ready: turn failed, retry waits\\nerror: ${OVERLOADED.replace(/[().]/g, "\\$&")}` +
            ` Please retry in 100s\\.\\nretry 1 of 1 waits out capacity; the next attempt runs in 1m[34]\\ds ` +
            `\\(turnguard retry w1 runs it now\\)\\n$`,
        ),
      );
      const rec = readJournal(journal).records.find((x) => x.event === "retry_scheduled");
      expect(rec?.pid).toBe(pid);
      // The owner's identity besides its pid: what `turnguard retry` checks before it signals.
      expect(rec?.pidStart).toBe(processStart(pid));
      expect(rec?.pidStart).toMatch(/^\d+$/);
      expect(rec?.pidSpace).toBe(pidSpace());
      const retry = await turnguard(["retry", "w1"], { env: env("") });
      expect([retry.code, retry.stdout, retry.stderr]).toEqual([
        0,
        `w1: retry 1 of 1 runs now (signalled pid ${rec?.pid})\n`,
        "",
      ]);
      const r = await run;
      expect([r.code, r.stdout, runs()]).toEqual([0, "the answer\n", 2]);
      expect(events().slice(-3)).toEqual([
        "retry_started 1/1",
        "retry_settled 1/1 succeeded: retry 1 of 1 succeeded",
        "turn_ended 1 ok",
      ]);
    }, 60_000);
  }

  test(
    "SIGTERM while a retry waits stops it: settled stopped, the failed attempt's exit code",
    async () => {
      const run = turnguard(
        ["run", "--name", "w1", "--retries", "1", "--retry-max-wait", "200", "--", FLAKY],
        {
          env: env("longhint,ok"),
          onSpawn: (c) => void until(scheduled, "schedule").then(() => c.kill("SIGTERM")),
        },
      );
      const r = await run;
      expect([r.code, r.stdout, runs()]).toEqual([1, "", 1]);
      expect(r.stderr).toEndWith("turnguard: retry 1 of 1 was stopped before it ran\n");
      expect(events().slice(-1)).toEqual([
        "retry_settled 0/1 stopped: retry 1 of 1 was stopped before it ran",
      ]);
      const w = await turnguard(["wait", "w1", "--print"], { env: env("") });
      expect(w.stdout).toEndWith("\nno retry waits (retry 1 of 1 was stopped before it ran)\n");
      const retry = await turnguard(["retry", "w1"], { env: env("") });
      expect([retry.code, retry.stderr]).toEqual([
        1,
        "turnguard: retry: no retry waits for w1 (turn 1: its retry is settled (retry 1 of 1 was stopped before it ran))\n",
      ]);
    },
    60_000,
  );

  test("turnguard retry: no such session exits 4; bad --retries is a usage error", async () => {
    const none = await turnguard(["retry", "ghost"], { env: env("") });
    expect([none.code, none.stderr]).toEqual([
      4,
      `turnguard: retry: no such session or name "ghost" in the journal ${journal}\n`,
    ]);
    for (const bad of ["-1", "1.5", "many", "101"]) {
      const r = await turnguard(["run", `--retries=${bad}`, "--", FLAKY], { env: env("ok") });
      expect([r.code, r.stderr]).toEqual([
        125,
        `turnguard: --retries: expected a whole number from 0 to 100, got "${bad}"\n`,
      ]);
    }
    expect(existsSync(join(home, "counter"))).toBe(false);
  }, 60_000);
});
