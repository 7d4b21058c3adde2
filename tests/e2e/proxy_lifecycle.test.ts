/**
 * `turnguard proxy` when things go wrong around the turn: the agent dies with prompts in
 * flight, the client hangs up, the agent ignores EOF, a turn goes silent, signals arrive,
 * the agent cannot start, the command line is wrong. Real processes, real signals.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { isRetryable, retryReason } from "../../lib/core/retry_hint.ts";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DENO } from "../helpers/cli.ts";
import {
  AGENT,
  BUN,
  fakeArgs,
  killedAfterEach,
  MAIN,
  openSession,
  prompt,
  type ProxyProcess,
  readOutcomes,
  rejection,
  type Scratch,
  scratch,
  startProxy,
  testEnv,
  withClient,
} from "../fixtures/acp/harness.ts";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(30_000);

const track = killedAfterEach();

function proxy(s: Scratch, extra: string[] = [], env: Record<string, string> = {}): ProxyProcess {
  const p = startProxy(s, fakeArgs(s, extra), [BUN, AGENT], env);
  track(p);
  return p;
}

/** Collects a proxy's stdout as lines. */
function stdoutLines(p: ProxyProcess): () => string[] {
  let out = "";
  p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
  return () => out.split("\n").filter((l) => l.length > 0);
}

const send = (p: ProxyProcess, message: unknown) =>
  p.child.stdin!.write(JSON.stringify(message) + "\n");

const INIT = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } };
const NEW = {
  jsonrpc: "2.0",
  id: 1,
  method: "session/new",
  params: { cwd: "/tmp", mcpServers: [] },
};
const promptMessage = (id: number, sessionId: string, text: string) => ({
  jsonrpc: "2.0",
  id,
  method: "session/prompt",
  params: { sessionId, prompt: [{ type: "text", text }] },
});

/** Waits until the agent answered `initialize`: it is up, its signal handlers set. */
async function agentReady(p: ProxyProcess): Promise<void> {
  const lines = stdoutLines(p);
  send(p, INIT);
  await until(() => lines().length === 1, "the initialize response");
}

/** The silence a timeout message names, in ms (`for 512ms`, `for 1.2s`). */
function silenceOf(message: string): number {
  const m = message.match(/^turn timed out: the agent streamed nothing for (\d+(?:\.\d+)?)(ms|s)$/);
  if (!m) throw new Error(`not a timeout message: ${message}`);
  return Number(m[1]) * (m[2] === "s" ? 1000 : 1);
}

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the agent dies mid-turn", () => {
  test("both prompts in flight get an error, then turnguard exits with its status", async () => {
    const s = scratch();
    const p = proxy(s);
    const errors = await withClient(p, async (ctx) => {
      const a = await openSession(ctx);
      const b = (await ctx.request("session/new", { cwd: "/tmp", mcpServers: [] })).sessionId;
      const first = rejection(prompt(ctx, a, "silent"));
      const second = rejection(prompt(ctx, b, "crash 200"));
      return await Promise.all([first, second]);
    });
    const message = "agent exited with status 3: fatal: backend connection lost";
    expect(errors.map((e) => [e.code, e.message])).toEqual([[-32603, message], [-32603, message]]);
    expect((errors[0].data as { turnguard: unknown }).turnguard).toMatchObject({
      status: "failed",
      category: "crash",
      message,
      code: 3,
    });
    expect(await p.exited).toEqual({ code: 3, signal: null });
    expect(p.stderr()).toBe("fatal: backend connection lost\n");
    const outcomes = readOutcomes(s.outcomes).sort((x, y) => x.session!.localeCompare(y.session!));
    expect(outcomes.map((o) => [o.session, o.status, o.exit, o.error?.category])).toEqual([
      ["sess-1", "failed", { code: 3, signal: null }, "crash"],
      ["sess-2", "failed", { code: 3, signal: null }, "crash"],
    ]);
  });

  test("a request that is not a prompt is answered too", async () => {
    const s = scratch();
    const p = startProxy(s, fakeArgs(s), ["sh", "-c", "read line; echo 'dying' >&2; exit 5"]);
    track(p);
    const lines = stdoutLines(p);
    send(p, INIT);
    expect(await p.exited).toEqual({ code: 5, signal: null });
    expect(lines().map((l) => JSON.parse(l))).toEqual([{
      jsonrpc: "2.0",
      id: 0,
      error: {
        code: -32603,
        message: "agent exited with status 5: dying",
        data: {
          turnguard: {
            status: "failed",
            category: "crash",
            message: "agent exited with status 5: dying",
            code: 5,
            anchor: null,
            // The same shape as a prompt's (turnguardData).
            retry: { retryable: false, reason: "crash: not retryable", afterMs: null, at: null },
          },
        },
      },
    }]);
  });
});

describe("the agent's last bytes", () => {
  // Under Bun the proxy's I/O is Bun-native; under Deno it is the portable Node path.
  test.each(["bun", "deno"])(
    "reach a slow client even when it reads long after the agent exited (%s)",
    (runtime) => {
      const s = scratch();
      const turnguard = runtime === "bun" ? [BUN, MAIN] : [DENO, "run", "-A", MAIN];
      const line = "x".repeat(100);
      const agent = `yes ${line} | head -n 60000`;
      // The client (the subshell) reads nothing for 3.5 s while the agent writes and exits.
      const script = `"$@" -- sh -c '${agent}' </dev/null | (sleep 3.5; wc -c)`;
      const r = spawnSync(
        "sh",
        // A long grace: the client's stdin is at EOF from the start, and on a loaded machine
        // the default 5 s could end the agent before the slow client has drained it.
        ["-c", script, "sh", ...turnguard, "proxy", "--verbose", "--grace", "60"],
        { env: testEnv(s), cwd: s.dir, encoding: "utf8" },
      );
      expect([r.status, r.stdout.trim()]).toEqual([0, String(101 * 60_000)]);
      expect(r.stderr).toContain("turnguard: agent exited with status 0\n");
    },
  );
});

describe("end of input", () => {
  test("the client closing stdin closes the agent's; turnguard exits with its status", async () => {
    const s = scratch();
    const p = proxy(s);
    const lines = stdoutLines(p);
    send(p, INIT);
    await until(() => lines().length === 1, "the initialize response");
    p.child.stdin!.end();
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(JSON.parse(lines()[0])).toMatchObject({ id: 0, result: { protocolVersion: 1 } });
  });

  test("an agent that ignores EOF gets SIGTERM after the grace period", async () => {
    const s = scratch();
    const p = proxy(s, ["--grace", "0.3", "--verbose"], { FAKE_IGNORE_EOF: "1" });
    await agentReady(p);
    p.child.stdin!.end();
    expect(await p.exited).toEqual({ code: 143, signal: null });
    expect(p.stderr()).toContain("turnguard: the agent ignored EOF; sending SIGTERM\n");
    expect(p.stderr()).not.toContain("SIGKILL");
  });

  test("an agent that ignores EOF and SIGTERM gets SIGKILL", async () => {
    const s = scratch();
    const p = proxy(s, ["--grace", "0.3", "--verbose"], {
      FAKE_IGNORE_EOF: "1",
      FAKE_IGNORE_TERM: "1",
    });
    await agentReady(p);
    p.child.stdin!.end();
    expect(await p.exited).toEqual({ code: 137, signal: null });
    expect(p.stderr()).toContain("turnguard: the agent ignored SIGTERM; sending SIGKILL\n");
  });
});

describe("--turn-timeout", () => {
  test("a silent turn is cancelled and answered with a timeout error", async () => {
    const s = scratch();
    const p = proxy(s, ["--turn-timeout", "0.5", "--grace", "3"]);
    const err = await withClient(p, async (ctx) => {
      return await rejection(prompt(ctx, await openSession(ctx), "silent"));
    });
    // The real silence: at least the timeout.
    const message = err.message;
    expect([err.code, silenceOf(message) >= 500]).toEqual([-32603, true]);
    expect((err.data as { turnguard: unknown }).turnguard).toMatchObject({
      status: "failed",
      category: "timeout",
      message,
      retry: { retryable: isRetryable("timeout", null), reason: retryReason("timeout", null) },
    });
    await p.exited;
    expect(readOutcomes(s.outcomes)[0]).toMatchObject({
      status: "failed",
      error: { category: "timeout", message },
      stopReason: null,
    });
  });

  test("an agent deaf to the cancel: answered after the grace, its late reply dropped", async () => {
    const s = scratch();
    const p = proxy(s, ["--turn-timeout", "0.4", "--grace", "0.2"]);
    const lines = stdoutLines(p);
    send(p, INIT);
    send(p, NEW);
    send(p, promptMessage(2, "sess-1", "slow 1500 late words"));
    await until(() => lines().some((l) => l.includes('"late words"')), "the late update");
    send(p, promptMessage(3, "sess-1", "echo next"));
    await until(() => lines().some((l) => l.includes('"id":3')), "the next answer");
    p.child.stdin!.end();
    expect(await p.exited).toEqual({ code: 0, signal: null });
    const responses = lines().map((l) => JSON.parse(l)).filter((m) => m.id === 2);
    expect(silenceOf(responses[0]?.error?.message ?? "")).toBeGreaterThanOrEqual(400);
    expect(responses).toEqual([{
      jsonrpc: "2.0",
      id: 2,
      error: {
        code: -32603,
        message: responses[0].error.message,
        data: {
          turnguard: expect.objectContaining({ status: "failed", category: "timeout" }),
        },
      },
    }]);
    expect(readOutcomes(s.outcomes).map((o) => [o.turn, o.status])).toEqual([
      [1, "failed"],
      [2, "ok"],
    ]);
  });

  test("waiting on the client's permission answer is not silence", async () => {
    const s = scratch();
    const p = proxy(s, ["--turn-timeout", "0.4"]);
    process.env.PERMISSION_DELAY_MS = "1200";
    try {
      const response = await withClient(p, async (ctx) => {
        return await prompt(ctx, await openSession(ctx), "permission");
      });
      expect(response).toEqual({ stopReason: "end_turn" });
    } finally {
      delete process.env.PERMISSION_DELAY_MS;
    }
    await p.exited;
    expect(readOutcomes(s.outcomes)[0]).toMatchObject({ status: "ok" });
  });
});

describe("signals", () => {
  test("SIGTERM is forwarded; the prompt in flight is answered, the turn cancelled", async () => {
    const s = scratch();
    const p = proxy(s);
    const lines = stdoutLines(p);
    send(p, INIT);
    send(p, NEW);
    send(p, promptMessage(2, "sess-1", "silent"));
    await until(() => lines().length === 2, "the session");
    await new Promise((r) => setTimeout(r, 100));
    p.child.kill("SIGTERM");
    expect(await p.exited).toEqual({ code: 143, signal: null });
    expect(JSON.parse(lines()[2])).toMatchObject({
      id: 2,
      error: { code: -32603, message: "agent exited with status 143 (killed by SIGTERM)" },
    });
    expect(readOutcomes(s.outcomes)[0]).toMatchObject({
      status: "cancelled",
      exit: { code: null, signal: "SIGTERM" },
    });
  });
});

describe("start-up failures", () => {
  const run = (s: Scratch, args: string[]) =>
    spawnSync(BUN, [MAIN, "proxy", ...args], { env: testEnv(s), cwd: s.dir, encoding: "utf8" });

  test("a missing agent command exits 127 with one line", () => {
    const s = scratch();
    const r = run(s, ["--", join(s.dir, "no-such-agent")]);
    expect([r.status, r.stdout, r.stderr]).toEqual([
      127,
      "",
      `turnguard: proxy: ${join(s.dir, "no-such-agent")}: command not found\n`,
    ]);
  });

  test("an agent that cannot be executed exits 126", () => {
    const s = scratch();
    const file = join(s.dir, "not-executable");
    writeFileSync(file, "#!/bin/sh\n");
    chmodSync(file, 0o644);
    const r = run(s, ["--", file]);
    expect([r.status, r.stderr]).toEqual([
      126,
      `turnguard: proxy: ${file}: cannot execute: ${file} is not executable (permission denied)\n`,
    ]);
  });

  for (
    const [args, message] of [
      [[], "proxy: missing the agent command (turnguard proxy [OPTIONS] -- AGENT_CMD [ARGS...])"],
      [
        ["--turn-timeout", "soon", "--", "cat"],
        '--turn-timeout: expected a number of seconds, got "soon"',
      ],
      [["--turn-timeout", "0", "--", "cat"], "--turn-timeout: must be more than 0 seconds"],
      [
        ["--max-line-bytes", "0", "--", "cat"],
        '--max-line-bytes: expected a whole number of bytes (at least 1), got "0"',
      ],
      [["--bogus", "--", "cat"], "proxy: Unknown option '--bogus'"],
      [["--agent", "nobody", "--", "cat"], "--agent nobody: no such agent profile"],
    ] as const
  ) {
    test(`usage error: ${args.join(" ") || "(no command)"}`, () => {
      const s = scratch();
      const r = run(s, [...args]);
      expect(r.status).toBe(125);
      expect(r.stdout).toBe("");
      expect(r.stderr).toStartWith(`turnguard: ${message}`);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    });
  }

  test("an outcome file that cannot be opened is a usage error", () => {
    const s = scratch();
    const r = run(s, ["--outcome-file", join(s.dir, "missing", "o.jsonl"), "--", "cat"]);
    expect([r.status, r.stderr]).toEqual([
      125,
      `turnguard: --outcome-file ${
        join(s.dir, "missing", "o.jsonl")
      }: cannot open for appending (ENOENT)\n`,
    ]);
  });
});
