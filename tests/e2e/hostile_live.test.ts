/**
 * Attacks on live evidence and `--fail-fast` (lib/proxy/live.ts, lib/proxy/answers.ts) by an
 * agent that has read the code (tests/fixtures/acp/hostile_live_agent.ts): it answers in the
 * same instant fail-fast cancels, never answers the cancel (nor its EOF), floods its log with
 * thousands of failed attempts; the client cancels while fail-fast fires, or runs two
 * sessions at once. Real processes and raw lines, two CPU burners beside them the whole
 * time; bounds are generous smoke bounds for a loaded machine, far below "never".
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  BUN,
  fakeArgs,
  killedAfterEach,
  type ProxyProcess,
  readOutcomes,
  ROOT,
  type Scratch,
  scratch,
  startProxy,
  testEnv,
} from "../fixtures/acp/harness.ts";
import { turnguard } from "../helpers/cli.ts";
import type { Outcome } from "../../lib/core/outcome.ts";

setDefaultTimeout(120_000);

const AGENT = join(ROOT, "tests/fixtures/acp/hostile_live_agent.ts");
/** Smoke bound: answered, or ended, "within seconds" beside two burners. */
const SECONDS_MS = 20_000;

let burners: ChildProcess[] = [];
beforeAll(() => {
  burners = [0, 1].map(() => spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" }));
});
afterAll(() => {
  for (const b of burners) b.kill("SIGKILL");
});

const track = killedAfterEach();

/** A raw client of a proxy: sends lines, waits for the answer to an id. */
function client(p: ProxyProcess) {
  let out = "";
  p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
  const lines = () =>
    out.split("\n").filter((l) => l.startsWith("{")).map((l) =>
      JSON.parse(l) as {
        id?: number;
        result?: Record<string, unknown>;
        error?: { message: string; data?: { turnguard?: Record<string, unknown> } };
      }
    );
  return {
    send: (m: unknown) => p.child.stdin!.write(JSON.stringify(m) + "\n"),
    answers: (id: number) => lines().filter((m) => m.id === id),
    async answer(id: number) {
      const until = Date.now() + SECONDS_MS;
      while (Date.now() < until) {
        const [a] = lines().filter((m) => m.id === id);
        if (a) return a;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no answer to ${id} within ${SECONDS_MS} ms: ${out}`);
    },
    out: () => out,
  };
}

async function opened(c: ReturnType<typeof client>, sessions = 1): Promise<string[]> {
  c.send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: 1, clientCapabilities: {} },
  });
  await c.answer(1);
  const ids: string[] = [];
  for (let i = 0; i < sessions; i++) {
    c.send({
      jsonrpc: "2.0",
      id: 10 + i,
      method: "session/new",
      params: { cwd: "/tmp", mcpServers: [] },
    });
    ids.push(String((await c.answer(10 + i)).result!.sessionId));
  }
  return ids;
}

function promptLine(id: number, sessionId: string, text: string) {
  return {
    jsonrpc: "2.0",
    id,
    method: "session/prompt",
    params: { sessionId, prompt: [{ type: "text", text }] },
  };
}

function proxy(s: Scratch, extra: string[], env: Record<string, string> = {}): ProxyProcess {
  return track(startProxy(s, fakeArgs(s, extra), [BUN, AGENT], env));
}

describe("--fail-fast, attacked", () => {
  test("the agent answers in the same instant fail-fast fires: each prompt gets exactly one answer", async () => {
    const s = scratch();
    const p = proxy(s, ["--no-journal", "--fail-fast"]);
    const c = client(p);
    const [sid] = await opened(c);
    for (let i = 0; i < 5; i++) {
      c.send(promptLine(100 + i, sid, "instant"));
      await c.answer(100 + i);
      // The proxy's next look still finds the quota line of the answered turn.
      await new Promise((r) => setTimeout(r, 1200));
    }
    p.child.stdin!.end();
    await p.exited;
    for (let i = 0; i < 5; i++) expect(c.answers(100 + i).length).toBe(1);
    expect(readOutcomes(s.outcomes).length).toBe(5);
  });

  test("the agent never answers the cancel nor EOF, the client cancels too: one answer, and the proxy ends", async () => {
    const s = scratch();
    const p = proxy(s, ["--no-journal", "--fail-fast"], { HOSTILE_IGNORE_EOF: "1" });
    const c = client(p);
    const [sid] = await opened(c);
    c.send(promptLine(3, sid, "deaf"));
    await new Promise((r) => setTimeout(r, 300));
    c.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: sid } });
    const a = await c.answer(3);
    expect(a.error?.data?.turnguard?.category ?? a.result?.stopReason).toBeDefined();
    p.child.stdin!.end();
    const left = Date.now();
    await p.exited;
    expect(Date.now() - left).toBeLessThan(SECONDS_MS);
    expect(c.answers(3).length).toBe(1);
  });

  test("two sessions retrying a quota at once: each prompt is answered once, early", async () => {
    const s = scratch();
    const p = proxy(s, ["--no-journal", "--fail-fast"]);
    const c = client(p);
    const [a, b] = await opened(c, 2);
    c.send(promptLine(3, a, "deaf"));
    c.send(promptLine(4, b, "deaf"));
    for (const id of [3, 4]) {
      expect((await c.answer(id)).error?.data?.turnguard?.category).toBe("quota");
    }
    p.child.stdin!.end();
    await p.exited;
    expect(c.answers(3).length).toBe(1);
    expect(c.answers(4).length).toBe(1);
  });
});

describe("--fail-fast, the client reuses the id", () => {
  test("a request under the id the agent still owes is refused, never answered by the agent's late answer", async () => {
    const s = scratch();
    // The SDK fake agent answers its cancel 200 ms late, `cancelled`.
    const p = track(startProxy(s, fakeArgs(s, ["--no-journal", "--fail-fast"])));
    const c = client(p);
    const [sid] = await opened(c);
    c.send(promptLine(3, sid, "retrying quota"));
    expect((await c.answer(3)).error?.data?.turnguard?.category).toBe("quota");
    // At once, under the same id: the agent has not answered the cancelled prompt yet.
    c.send(promptLine(3, sid, "echo reused"));
    for (let i = 0; i < 400 && c.answers(3).length < 2; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const [, second] = c.answers(3);
    expect(second.error?.message).toContain("send it under a new id");
    // Once the agent's late answer came (and was swallowed), the id is free again.
    await new Promise((r) => setTimeout(r, 1500));
    c.send(promptLine(3, sid, "echo again"));
    for (let i = 0; i < 400 && c.answers(3).length < 3; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(c.answers(3)[2]?.result?.stopReason).toBe("end_turn");
    p.child.stdin!.end();
    await p.exited;
    expect(c.answers(3).length).toBe(3);
    expect(c.out()).not.toContain('"stopReason":"cancelled"');
  });
});

describe("live evidence, flooded", () => {
  test("20,000 failed attempts in a turn: the journal and the Outcome keep a bounded few", async () => {
    const s = scratch();
    const journal = join(s.dir, "journal.jsonl");
    const p = proxy(s, ["--journal", journal]);
    const c = client(p);
    const [sid] = await opened(c);
    c.send(promptLine(3, sid, "flood 16000"));
    // A turn that said nothing while its log filled with a quota: answered as that failure.
    expect((await c.answer(3)).error?.data?.turnguard?.category).toBe("quota");
    p.child.stdin!.end();
    await p.exited;
    const records = readFileSync(journal, "utf8").split("\n").filter((l) => l).map((l) =>
      JSON.parse(l) as { event: string; n?: number }
    );
    const attempts = records.filter((r) => r.event === "agent_attempt");
    expect(attempts.length).toBeGreaterThan(0);
    // At most 16 told per look, a look a second: far below one record per attempt.
    expect(attempts.length).toBeLessThan(400);
    expect(attempts.at(-1)!.n!).toBeGreaterThan(1000);
    const [o] = readOutcomes(s.outcomes);
    expect(o.agentAttempts!.length).toBeLessThanOrEqual(100);
  });
});

describe("the records wait, attacked", () => {
  test("a transcript swapped for a FIFO, a link, a sparse terabyte during the wait and the late watch: turns are answered, the proxy ends", async () => {
    const s = scratch();
    const journal = join(s.dir, "journal.jsonl");
    const p = track(
      startProxy(
        s,
        [
          "--config",
          s.config,
          "--agent",
          "claude",
          "--outcome-file",
          s.outcomes,
          "--journal",
          journal,
        ],
        undefined,
        { FAKE_IGNORE_EOF: "1" },
      ),
    );
    const c = client(p);
    const [sid] = await opened(c);
    c.send(promptLine(3, sid, "records-hostile"));
    await c.answer(3);
    // The next turn starts while the first one's records are watched on.
    c.send(promptLine(4, sid, "echo after"));
    expect((await c.answer(4)).result?.stopReason).toBe("end_turn");
    await new Promise((r) => setTimeout(r, 2000));
    p.child.stdin!.end();
    const left = Date.now();
    await p.exited;
    expect(Date.now() - left).toBeLessThan(SECONDS_MS);
    expect(c.answers(3).length).toBe(1);
    expect(c.answers(4).length).toBe(1);
    expect(readOutcomes(s.outcomes).length).toBe(2);
  });
});

describe("run --fail-fast, attacked", () => {
  test("an agent deaf to SIGTERM flooding its log with a spent quota: run ends, failed, its journal bounded", async () => {
    const s = scratch();
    const journal = join(s.dir, "journal.jsonl");
    // glog lines of the agent's own pid (the fake profile reads glog, attributed by pid).
    const line =
      'printf "E%s %s.000000 %d errorreport.go:223] agent executor error: RESOURCE_EXHAUSTED (code 429): Individual quota reached.\\n" "$(date +%m%d)" "$(date +%H:%M:%S)" $$';
    const script =
      `trap "" TERM; while :; do i=0; while [ $i -lt 300 ]; do ${line}; i=$((i+1)); done >> "$FAKE_LOG"; sleep 0.05; done`;
    const started = Date.now();
    const r = await turnguard(
      [
        "run",
        "--config",
        s.config,
        "--agent",
        "fake",
        "--journal",
        journal,
        "--outcome-json",
        "--fail-fast",
        "--",
        "sh",
        "-c",
        script,
      ],
      { env: testEnv(s), cwd: s.dir },
    );
    expect(Date.now() - started).toBeLessThan(SECONDS_MS * 2);
    expect(r.code).toBe(1);
    const outcome = JSON.parse(r.stdout) as Outcome;
    expect(outcome).toMatchObject({ status: "failed", error: { category: "quota" } });
    expect(outcome.endedEarly?.reason).toContain("--fail-fast");
    const attempts = readFileSync(journal, "utf8").split("\n").filter((l) =>
      l.includes(
        '"agent_attempt"',
      )
    );
    expect(attempts.length).toBeGreaterThan(0);
    expect(attempts.length).toBeLessThan(400);
  });
});

describe("turnguard's stderr, never read", () => {
  test("an agent flooding its stderr while nobody reads turnguard's: memory bounded, SIGTERM ends it", async () => {
    const s = scratch();
    const fifo = join(s.dir, "stderr.fifo");
    const readerPid = join(s.dir, "reader.pid");
    spawnSync("mkfifo", [fifo]);
    // A reader holds the FIFO open and never reads: turnguard's stderr is full after 64 KiB.
    const script = `sleep 120 < ${fifo} & echo $! > ${readerPid}; exec "${BUN}" "${
      join(ROOT, "main.ts")
    }" proxy --no-journal -- sh -c 'yes 0123456789abcdef0123456789abcdef >&2' 2> ${fifo}`;
    const child = spawn("sh", ["-c", script], { stdio: ["pipe", "ignore", "ignore"] });
    const ended = new Promise((r) => child.once("close", r));
    const rssKb = () => {
      const m = readFileSync(`/proc/${child.pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/);
      return Number(m?.[1] ?? 0);
    };
    try {
      await new Promise((r) => setTimeout(r, 2000));
      const early = rssKb();
      await new Promise((r) => setTimeout(r, 3000));
      // `yes` writes hundreds of MiB a second: queued, they would be gigabytes by now.
      expect(rssKb() - early).toBeLessThan(100 * 1024);
      // SIGTERM means "finish now" (before, the thread sat in write(2) to the full pipe: no
      // handler ran, the proxy never ended).
      const signalled = Date.now();
      child.kill("SIGTERM");
      await Promise.race([ended, new Promise((r) => setTimeout(r, SECONDS_MS + 5000))]);
      expect(Date.now() - signalled).toBeLessThan(SECONDS_MS);
    } finally {
      child.kill("SIGKILL");
      process.kill(Number(readFileSync(readerPid, "utf8")), "SIGKILL");
    }
  });
});
