/**
 * Hostile input against the proxy and the agent process it runs: JSON nested tens of
 * thousands of levels deep in every position, pathological text through every classifier
 * path, an agent that floods stdout and never reads stdin, request ids nobody expects,
 * an absurd `--grace`, a client that hangs up mid-prompt, turnguard killed while the agent
 * has children of its own, and the agent's last bytes on a loaded machine. Real processes.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { errorCause } from "../../lib/cause/error_cause.ts";
import { buildClassifier } from "../../lib/cause/classifier.ts";
import { readMessage } from "../../lib/acp/jsonrpc.ts";
import { explain } from "../../lib/cause/explain.ts";
import { classify } from "../../lib/cause/classify.ts";
import { findCause, tidyCause } from "../../lib/cause/anchors.ts";
import { jsonText, MAX_JSON_DEPTH, nestsDeeper, parseBoundedJson } from "../../lib/text/json.ts";
import { unwrapPrintedPublish } from "../../lib/publish/unwrap.ts";
import { type ProxyOptions, runProxy } from "../../lib/proxy/proxy.ts";
import { loadRegistry } from "../../lib/config/registry.ts";
import { parseDuration, parseRecovery } from "../../lib/core/retry_hint.ts";
import { stderrCause } from "../../lib/run/run.ts";
import { MAX_TIMER_MS, timerDelay } from "../../lib/io/timer_delay.ts";
import {
  AGENT,
  BUN,
  fakeArgs,
  MAIN,
  openSession,
  prompt,
  readOutcomes,
  type Scratch,
  scratch,
  startProxy,
  testEnv,
  withClient,
} from "../fixtures/acp/harness.ts";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(60_000);

const DEPTH = 50_000;
const deepArray = "[".repeat(DEPTH) + "]".repeat(DEPTH);
const deepObject = '{"a":'.repeat(DEPTH) + "1" + "}".repeat(DEPTH);

/** Runs `bun main.ts proxy ARGS -- AGENT`, writes `input`, collects everything. */
function runProxyProcess(
  s: Scratch,
  args: string[],
  agent: string[],
  input: string | Uint8Array,
  env: Record<string, string> = {},
): Promise<{ out: Buffer; stderr: string; code: number | null; signal: string | null }> {
  const child = spawn(BUN, [MAIN, "proxy", ...args, "--", ...agent], {
    stdio: ["pipe", "pipe", "pipe"],
    env: testEnv(s, env),
    cwd: s.dir,
  });
  const out: Buffer[] = [];
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => out.push(c));
  child.stderr!.on("data", (c: Buffer) => stderr += c.toString());
  child.stdin!.on("error", () => {});
  child.stdin!.end(input);
  return new Promise((res) =>
    child.once(
      "close",
      (code, signal) => res({ out: Buffer.concat(out), stderr, code, signal }),
    )
  );
}

/** Runs the proxy in process over `command ARGS`: its client's input, output and stderr. */
function inProcessProxy(command: string, args: string[], extra: Partial<ProxyOptions> = {}) {
  const input = new PassThrough();
  const output = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  output.on("data", (c: Buffer) => out += c.toString());
  stderr.on("data", (c: Buffer) => err += c.toString());
  const running = runProxy({
    command,
    args,
    profile: { name: "fake", match: [], logs: [], logFormat: "plain", anchors: null },
    classifier: buildClassifier([]),
    env: process.env,
    input,
    output,
    stderr,
    forwardSignals: false,
    ...extra,
  });
  return { input, running, out: () => out, err: () => err };
}

/** An agent that reads `bytes` bytes, writes the file's bytes, then waits for EOF. */
const replayAgent = (bytes: number, file: string) => [
  "sh",
  "-c",
  `head -c ${bytes} >/dev/null; cat "$0"; cat >/dev/null`,
  file,
];

const line = (value: unknown) => JSON.stringify(value) + "\n";
const PROMPT = line({
  jsonrpc: "2.0",
  id: 1,
  method: "session/prompt",
  params: { sessionId: "s1", prompt: [{ type: "text", text: "hi" }] },
});

describe("JSON nested tens of thousands of levels deep", () => {
  test("is opaque to every reader, which never throws", () => {
    expect([nestsDeeper(deepArray), nestsDeeper('["[[[[[["]'), nestsDeeper("[".repeat(2000))])
      .toEqual([true, false, true]);
    expect(nestsDeeper("[".repeat(MAX_JSON_DEPTH) + "]".repeat(MAX_JSON_DEPTH))).toBe(false);
    expect(parseBoundedJson(deepArray)).toBeUndefined();
    const deep = JSON.parse(deepObject);
    expect(jsonText(deep)).toBe("");
    const read = readMessage(
      new TextEncoder().encode(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"data":${deepArray}}}`),
    );
    expect(read).toMatchObject({ kind: "opaque", message: { kind: "error", id: 1 } });
    // A caller that walks it anyway (error data from elsewhere) gets no exception.
    const { cause } = errorCause(
      { code: -32603, message: "boom", data: deep },
      buildClassifier([]),
      0,
    );
    expect(cause.error.message).toBe("boom");
  });

  const positions: [string, string, string][] = [
    [
      "error.data of the prompt's response",
      PROMPT,
      line({ jsonrpc: "2.0", id: 1, error: { code: -32603, message: "x", data: "DEEP" } }),
    ],
    ["the prompt's result", PROMPT, line({ jsonrpc: "2.0", id: 1, result: "DEEP" })],
    [
      "a session/update",
      PROMPT,
      line({
        jsonrpc: "2.0",
        method: "session/update",
        params: {
          sessionId: "s1",
          update: { sessionUpdate: "tool_call", toolCallId: "t", rawInput: "DEEP" },
        },
      }) + line({ jsonrpc: "2.0", id: 1, result: { stopReason: "end_turn", _meta: "DEEP" } }),
    ],
    [
      "the prompt's _meta and the agent's request params",
      line({
        jsonrpc: "2.0",
        id: 1,
        method: "session/prompt",
        params: { sessionId: "s1", prompt: [], _meta: "DEEP" },
      }),
      line({ jsonrpc: "2.0", id: 7, method: "fs/read_text_file", params: "DEEP" }) +
      line({ jsonrpc: "2.0", id: 1, error: { code: 1, message: "DEEP" } }),
    ],
  ];
  for (const [where, request, reply] of positions) {
    for (const shape of ["array", "object"]) {
      test(`in ${where} (${shape}): passed byte for byte, answered once, turnguard exits`, async () => {
        const s = scratch();
        const deep = shape === "array" ? deepArray : deepObject;
        const sent = request.replaceAll('"DEEP"', deep);
        const answer = reply.replaceAll('"DEEP"', deep);
        const file = join(s.dir, "reply.jsonl");
        writeFileSync(file, answer);
        // Reads the prompt, answers it from the file, then waits for EOF.
        const r = await runProxyProcess(s, fakeArgs(s), replayAgent(sent.length, file), sent);
        expect([r.code, r.signal]).toEqual([0, null]);
        expect(r.out.length).toBe(Buffer.byteLength(answer));
        expect(r.out.equals(Buffer.from(answer))).toBe(true);
        expect(r.stderr).toBe("");
      });
    }
  }

  test("an agent that dies after a deep line: the prompt still gets its one answer", async () => {
    const s = scratch();
    const file = join(s.dir, "noise.jsonl");
    const noise = line({ jsonrpc: "2.0", method: "x/noise", params: "DEEP" }).replace(
      '"DEEP"',
      deepObject,
    );
    writeFileSync(file, noise);
    const agent = ["sh", "-c", `head -c ${PROMPT.length} >/dev/null; cat "$0"; exit 3`, file];
    const r = await runProxyProcess(s, fakeArgs(s), agent, PROMPT);
    expect(r.code).toBe(3);
    const text = r.out.toString();
    expect(text.startsWith(noise)).toBe(true);
    const rest = text.slice(noise.length).split("\n").filter((l) => l !== "");
    expect(rest.map((l) => JSON.parse(l).id)).toEqual([1]);
    expect(readOutcomes(s.outcomes).map((o) => o.status)).toEqual(["failed"]);
  });
});

describe("a session/prompt nested too deeply to read", () => {
  const deepPrompt = (valid: boolean) =>
    '{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":' +
    `[{"type":"text","text":"hi","x":${deepArray}}]}}`.slice(0, valid ? undefined : -1) + "\n";
  for (const valid of [true, false]) {
    test(`is a turn from its top-level members (${valid ? "parsed envelope" : "invalid JSON: its first bytes"})`, async () => {
      const s = scratch();
      const sent = deepPrompt(valid);
      const file = join(s.dir, "answer.jsonl");
      const answer = line({
        jsonrpc: "2.0",
        method: "session/update",
        params: {
          sessionId: "s1",
          update: {
            sessionUpdate: "agent_message_chunk",
            content: { type: "text", text: "hello" },
          },
        },
      }) + line({ jsonrpc: "2.0", id: 7, result: { stopReason: "end_turn" } });
      writeFileSync(file, answer);
      const r = await runProxyProcess(s, fakeArgs(s), replayAgent(sent.length, file), sent);
      expect([r.code, r.signal]).toEqual([0, null]);
      expect(r.out.toString()).toBe(answer);
      expect(readOutcomes(s.outcomes).map((o) => [o.session, o.turn, o.status, o.reply.chars]))
        .toEqual([["s1", 1, "ok", 5]]);
    });
  }
});

describe("the last-resort guard", () => {
  test("a line whose reading throws still passes, and the proxy still ends", async () => {
    let reads = 0;
    const p = inProcessProxy("cat", [], {
      // Reading the first lines throws (as far as they get to the clock).
      now: () => {
        if (++reads <= 2) throw new Error("clock exploded");
        return Date.now();
      },
    });
    const sent = PROMPT + line({ jsonrpc: "2.0", id: 2, result: {} }) + "not json\n";
    p.input.end(sent);
    const result = await p.running;
    expect(result.exitCode).toBe(0);
    expect(p.out()).toBe(sent);
    expect(p.err()).toContain(
      "turnguard: reading a line failed (clock exploded); it passed through unread",
    );
    expect(p.err().split("\n").filter((l) => l.includes("reading")).length).toBe(1);
  });
});

describe("pathological text through every classifier path", () => {
  const N = 100_000;
  const runs: [string, string][] = [
    ["429 ", " "],
    ["429 ", "\t"],
    ["429 ", " \n"],
    ["429 ", "{"],
    ["429 ", "["],
    ['429 {"', "1"],
    ["429 ", "```a\n"],
    ["429 ", "~~~\n x\n"],
    ["status", " "],
    ["API Error", "\t"],
    ["you've hit your ", "a "],
    ["retry-after: ", "1"],
    ["retryDelay: ", "1"],
    ["I0101 00:00:00.1 ", "a:1 "],
  ];
  const texts = runs.map(([head, unit]) => (head + unit.repeat(N / unit.length)).slice(0, N));

  test("each path takes linear time (generous bound) and never throws", async () => {
    const anchors = buildClassifier((await loadRegistry({ env: {}, cwd: "/tmp" })).anchors);
    const paths: Record<string, (s: string) => unknown> = {
      "proxy error message": (s) => errorCause({ code: -32603, message: s }, anchors, 0),
      "proxy error data": (s) => errorCause({ code: -32603, message: "", data: s }, anchors, 0),
      "proxy error data object": (s) =>
        errorCause({ code: 1, message: "x", data: { error: { message: s } } }, anchors, 0),
      "stderr": (s) => stderrCause(s, 1, anchors, 0, []),
      "log line": (s) => findCause(anchors, [{ kind: "log", line: s }]),
      "classify": (s) => classify(s, undefined, anchors, 0),
      "explain": (s) => explain(anchors, { kind: "text", text: s }),
      "tidy": (s) => tidyCause(s, "glog"),
      "retry hint": (s) => parseRecovery(s, 0),
      "duration": (s) => parseDuration(s),
      "printed publish": (s) => unwrapPrintedPublish(s, [], null, []),
    };
    const slow: string[] = [];
    const started = performance.now();
    for (const [name, path] of Object.entries(paths)) {
      texts.forEach((t, i) => {
        const t0 = performance.now();
        path(t);
        const ms = performance.now() - t0;
        // Quadratic paths took 15-40 s here; linear ones take well under 0.5 s.
        if (ms > 3000) slow.push(`${name} on ${JSON.stringify(runs[i])}: ${Math.round(ms)} ms`);
      });
    }
    expect(slow).toEqual([]);
    expect(performance.now() - started).toBeLessThan(45_000);
  });

  test("a retry-after no date can hold is no hint (it threw from toISOString)", () => {
    expect(parseRecovery(`retry-after: ${"9".repeat(400)}`, 0)).toBeNull();
    expect(parseRecovery("Retry-After: Mon, 99 Foo 9999 99:99:99 GMT", 0)).toBeNull();
  });

  test("end to end: an agent error of 100k spaces is answered at once", async () => {
    const s = scratch();
    const reply = line({
      jsonrpc: "2.0",
      id: 1,
      error: {
        code: -32603,
        message: "429 " + " ".repeat(N) + "x",
        data: "status" + "\t".repeat(N),
      },
    });
    const file = join(s.dir, "reply.jsonl");
    writeFileSync(file, reply);
    const agent = [
      "sh",
      "-c",
      `head -c ${PROMPT.length} >/dev/null; cat "$0"; cat >/dev/null`,
      file,
    ];
    const t0 = performance.now();
    const r = await runProxyProcess(s, fakeArgs(s), agent, PROMPT);
    expect(performance.now() - t0).toBeLessThan(30_000);
    expect(r.code).toBe(0);
    expect(r.out.toString()).toBe(reply);
    expect(readOutcomes(s.outcomes).map((o) => [o.status, o.error?.category])).toEqual([
      ["failed", "rate_limit"],
    ]);
  });
});

describe("an agent that floods stdout and never reads stdin", () => {
  test("is stopped once the client closed its input (the grace does not wait on the flood)", async () => {
    const s = scratch();
    const flood = join(s.dir, "flood.js");
    writeFileSync(
      flood,
      `process.on("SIGTERM", () => {});
const line = Buffer.from(JSON.stringify({ jsonrpc: "2.0", method: "x/noise", params: "x".repeat(500) }) + "\\n");
const go = () => { while (process.stdout.write(line)); process.stdout.once("drain", go); };
go();`,
    );
    // 3 MB the agent never reads: more than the pipe holds.
    const input = Buffer.alloc(3 * 1024 * 1024, 0x61);
    const t0 = performance.now();
    const r = await runProxyProcess(s, ["--grace", "0.3", ...fakeArgs(s)], ["node", flood], input);
    expect(performance.now() - t0).toBeLessThan(30_000);
    // Killed: by SIGKILL after it ignored SIGTERM (or by SIGTERM when the grace ended
    // before its handler was set, on a loaded machine).
    expect([137, 143]).toContain(r.code!);
    expect(r.out.length).toBeGreaterThan(0);
  });
});

describe("request ids nobody expects", () => {
  test("null, 1e999 and an id reused in flight: each request gets exactly one answer", async () => {
    const s = scratch();
    const input = [
      '{"jsonrpc":"2.0","id":null,"method":"session/new","params":{}}',
      '{"jsonrpc":"2.0","id":1e999,"method":"session/new","params":{}}',
      '{"jsonrpc":"2.0","id":5,"method":"session/new","params":{}}',
      '{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}',
    ].join("\n") + "\n";
    const agent = ["sh", "-c", `head -c ${input.length} >/dev/null; echo dying >&2; exit 3`];
    const r = await runProxyProcess(s, fakeArgs(s), agent, input);
    expect(r.code).toBe(3);
    const ids = r.out.toString().split("\n").filter((l) => l !== "").map((l) =>
      l.match(/^\{"jsonrpc":"2\.0","id":([^,]+),"error"/)?.[1]
    );
    expect(ids.sort()).toEqual(["1e999", "5", "5", "null"]);
  });
});

describe("--grace", () => {
  test("above 2^31 ms is refused with one clear line (it became 1 ms)", async () => {
    const s = scratch();
    const r = await runProxyProcess(s, ["--grace", "3000000"], ["cat"], "");
    // The proxy's own usage error: 125, never taken for the agent's status.
    expect(r.code).toBe(125);
    expect(r.stderr).toBe(
      'turnguard: --grace: at most 2147483 seconds (about 24 days), got "3000000"\n',
    );
    expect([timerDelay(2 ** 40), timerDelay(-5), timerDelay(NaN), timerDelay(10)])
      .toEqual([MAX_TIMER_MS, 0, 0, 10]);
  });
});

describe("a client that hangs up mid-prompt", () => {
  test("the turn is cancelled, not the agent's crash", async () => {
    const s = scratch();
    const p = startProxy(s, fakeArgs(s, ["--verbose"]), [BUN, AGENT]);
    await withClient(p, async (ctx) => {
      const session = await openSession(ctx);
      void prompt(ctx, session, "silent").catch(() => {});
      await until(() => p.stderr().includes("turn 1: started"));
    });
    await p.exited;
    const outcomes = readOutcomes(s.outcomes);
    expect(outcomes.map((o) => [o.status, o.error?.category ?? null])).toEqual([
      ["cancelled", null],
    ]);
  });
});

async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether a process with this pid is alive (and not a zombie). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe("the agent's process group", () => {
  const GROUP = 'sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > "$0"; ';
  const modes: [string, (s: Scratch) => string[]][] = [
    ["proxy", (s) => ["proxy", ...fakeArgs(s)]],
    ["run", () => ["run"]],
  ];

  for (const [mode, args] of modes) {
    test(`${mode}: SIGTERM to turnguard stops the agent's children too`, async () => {
      const s = scratch();
      const pidFile = join(s.dir, "child.pid");
      const child = spawn(
        BUN,
        [MAIN, ...args(s), "--", "sh", "-c", GROUP + "wait", pidFile],
        { stdio: ["pipe", "ignore", "ignore"], env: testEnv(s), cwd: s.dir },
      );
      await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "");
      const pid = Number(readFileSync(pidFile, "utf8"));
      expect(alive(pid)).toBe(true);
      child.kill("SIGTERM");
      await closed(child);
      // turnguard handled the signal (forwarded it) rather than dying of it.
      expect(child.signalCode).toBeNull();
      try {
        await until(() => !alive(pid), 10_000);
      } finally {
        if (alive(pid)) process.kill(pid, "SIGKILL");
      }
    });

    test(`${mode}: what the agent left running when it exited is stopped`, async () => {
      const s = scratch();
      const pidFile = join(s.dir, "child.pid");
      const child = spawn(
        BUN,
        [MAIN, ...args(s), "--", "sh", "-c", GROUP + "exit 0", pidFile],
        { stdio: ["pipe", "ignore", "ignore"], env: testEnv(s), cwd: s.dir },
      );
      child.stdin!.end();
      expect(await closed(child)).toBe(0);
      const pid = Number(readFileSync(pidFile, "utf8"));
      await until(() => !alive(pid));
    });
  }

  test("proxy: SIGKILL of turnguard cannot be caught (a known limit); the agent still sees EOF", async () => {
    const s = scratch();
    const pidFile = join(s.dir, "agent.pid");
    const child = spawn(
      BUN,
      [MAIN, "proxy", ...fakeArgs(s), "--", "sh", "-c", 'echo $$ > "$0"; exec cat', pidFile],
      { stdio: ["pipe", "ignore", "ignore"], env: testEnv(s), cwd: s.dir },
    );
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "");
    const pid = Number(readFileSync(pidFile, "utf8"));
    child.kill("SIGKILL");
    await closed(child);
    await until(() => !alive(pid));
  });
});

function closed(child: ChildProcess): Promise<number | null> {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) return res(child.exitCode);
    child.once("close", (code) => res(code));
  });
}

describe("the agent's last bytes on a loaded machine", () => {
  test("every byte it wrote before it exited reaches a slow client, run after run", async () => {
    const s = scratch();
    const agent = join(s.dir, "burst.js");
    // ~6 MB of lines as fast as it can, then exit at once.
    writeFileSync(
      agent,
      `const parts = []; let i = 0, n = 0;
while (n < 6e6) { const l = JSON.stringify({ jsonrpc: "2.0", method: "x/n", params: { i: i++, p: "y".repeat(i % 900) } }) + "\\n"; parts.push(l); n += l.length; }
const all = Buffer.from(parts.join(""));
require("fs").writeFileSync(process.argv[2], String(all.length) + " " + require("crypto").createHash("sha256").update(all).digest("hex"));
process.stdout.write(all, () => process.exit(0));`,
    );
    const burners = [0, 1].map(() =>
      spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" })
    );
    try {
      for (let run = 0; run < 3; run++) {
        const expected = join(s.dir, `expected-${run}`);
        const child = spawn(BUN, [MAIN, "proxy", ...fakeArgs(s), "--", "node", agent, expected], {
          stdio: ["pipe", "pipe", "ignore"],
          env: testEnv(s),
          cwd: s.dir,
        });
        const hash = createHash("sha256");
        let bytes = 0;
        // A slow reader: pauses after every chunk.
        child.stdout!.on("data", (c: Buffer) => {
          hash.update(c);
          bytes += c.length;
          child.stdout!.pause();
          setTimeout(() => child.stdout!.resume(), 2);
        });
        const ended = new Promise((r) => child.stdout!.once("end", r));
        const code = await closed(child);
        // All of stdout is read (the process may be reported closed before its paused
        // stream gave up its last chunks).
        await ended;
        child.stdin!.end();
        expect(code).toBe(0);
        expect(`${bytes} ${hash.digest("hex")}`).toBe(readFileSync(expected, "utf8"));
      }
    } finally {
      for (const b of burners) b.kill("SIGKILL");
    }
  });
});

// The proxy's bound on requests in flight: past `maxPending` of one side, a request is
// answered by turnguard at once (a retryable `capacity` error) and not forwarded, so a peer
// that never answers cannot grow turnguard without bound; every request still gets exactly
// one answer.
const CAP = 100;
const OVER = 10;
const capped = (command: string, args: string[]) =>
  inProcessProxy(command, args, { maxPending: CAP });
const lines = (text: string) => text.split("\n").filter((l) => l !== "");

const request = (id: number, method = "session/new") =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: { cwd: "/" } }) + "\n";

const errorOf = (l: string) =>
  JSON.parse(l) as { id: number; error: { code: number; message: string } };

describe("requests in flight are bounded per direction", () => {
  test("client: past the cap each request is answered at once, the rest when the agent dies", async () => {
    // The agent reads everything and never answers; it exits when its input closes.
    const p = capped("sh", ["-c", "cat >/dev/null"]);
    for (let id = 1; id <= CAP + OVER; id++) p.input.write(request(id));
    // The overflow is answered while the agent still runs.
    await until(() => lines(p.out()).length >= OVER);
    const early = lines(p.out()).map(errorOf);
    expect(early.map((r) => r.id)).toEqual(
      Array.from({ length: OVER }, (_, i) => CAP + 1 + i),
    );
    for (const r of early) {
      expect(r.error.code).toBe(-32603);
      expect(r.error.message).toBe(
        `turnguard: too many requests in flight (${CAP}); this one was not forwarded`,
      );
    }
    p.input.end();
    expect((await p.running).exitCode).toBe(0);
    const all = lines(p.out()).map(errorOf);
    expect(all.length).toBe(CAP + OVER);
    expect(new Set(all.map((r) => r.id)).size).toBe(CAP + OVER);
  });

  test("client: one that floods requests and never reads is paused, not buffered; then all are answered", async () => {
    // The client's output is never read until the end: each write waits for the reader.
    const taken: Buffer[] = [];
    let reading = false;
    const parked: (() => void)[] = [];
    const output = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _enc, done) {
        taken.push(chunk);
        if (reading) done();
        else parked.push(done);
      },
    });
    const input = new PassThrough({ highWaterMark: 64 * 1024 });
    const running = runProxy({
      command: "sh",
      args: ["-c", "cat >/dev/null"],
      profile: { name: "fake", match: [], logs: [], logFormat: "plain", anchors: null },
      classifier: buildClassifier([]),
      env: process.env,
      input,
      output,
      stderr: new PassThrough(),
      forwardSignals: false,
      maxPending: CAP,
    });
    // About 20 MiB of answers for the overflow, far past what turnguard keeps for a peer.
    const FLOOD = 150_000;
    let id = 1;
    const flood = async () => {
      while (id <= FLOOD) {
        if (!input.write(request(id++))) {
          // Still not taken a moment later: turnguard stopped reading the client.
          const drained = await Promise.race([
            new Promise<boolean>((r) => input.once("drain", () => r(true))),
            new Promise<boolean>((r) => setTimeout(() => r(false), 1500)),
          ]);
          if (!drained) return;
        }
      }
    };
    await flood();
    expect(id).toBeLessThan(FLOOD);
    // The answers held for the client (in the stream's buffer) are bounded, not the flood's.
    expect(output.writableLength).toBeLessThan(8 * 1024 * 1024);
    // The client reads again: turnguard resumes, and every request gets exactly one answer.
    reading = true;
    for (const done of parked.splice(0)) done();
    await flood();
    input.end();
    expect((await running).exitCode).toBe(0);
    const all = lines(Buffer.concat(taken).toString()).map(errorOf);
    expect(all.length).toBe(FLOOD);
    expect(new Set(all.map((r) => r.id)).size).toBe(FLOOD);
  });

  test("agent: one that floods requests and never reads is paused, not buffered", async () => {
    const s = scratch();
    const agent = join(s.dir, "flood_agent.js");
    const progress = join(s.dir, "progress");
    // Asks 150 000 times (its writes block when nobody reads them), never reads its stdin,
    // and notes how far it got; stops at a SIGTERM (the proxy's grace after the client left).
    writeFileSync(
      agent,
      `const fs = require("node:fs");
let id = 1;
function more() {
  while (id <= 150000) {
    const line = JSON.stringify({ jsonrpc: "2.0", id, method: "fs/read", params: {} }) + "\\n";
    id++;
    if (!process.stdout.write(line)) {
      fs.writeFileSync(${JSON.stringify(progress)}, String(id));
      return process.stdout.once("drain", more);
    }
  }
  fs.writeFileSync(${JSON.stringify(progress)}, "all");
}
more();
setInterval(() => {}, 1000);
`,
    );
    const p = inProcessProxy("node", [agent], { maxPending: CAP, graceMs: 200 });
    // Its requests past the cap are refused to its own stdin, which it never reads: once
    // those refusals pile up, turnguard stops reading it, so it cannot get to the end.
    await until(() => existsSync(progress) && readFileSync(progress, "utf8") !== "");
    await Bun.sleep(1500);
    expect(readFileSync(progress, "utf8")).not.toBe("all");
    p.input.end();
    await p.running;
    expect(lines(p.out()).length).toBeLessThanOrEqual(CAP);
  });

  test("client: a batch's requests past the cap are refused and taken out of it; the rest goes on as it was", async () => {
    const got = join(scratch().dir, "agent-input");
    const p = capped("sh", ["-c", `cat > '${got}'`]);
    for (let id = 1; id <= CAP; id++) p.input.write(request(id));
    // Past the cap: two requests and a notification in one batch, written with spaces.
    const note = '{"jsonrpc":"2.0","method":"x/note","params":{"a":[1, "],"]}}';
    p.input.write(`[ ${request(201).trim()} ,${note}, ${request(202).trim()} ]\n`);
    // A batch of refused requests only is not sent at all.
    p.input.write(`[${request(203).trim()}]\n`);
    await until(() => lines(p.out()).length >= 3);
    expect(lines(p.out()).map(errorOf).map((r) => [r.id, r.error.code])).toEqual([
      [201, -32603],
      [202, -32603],
      [203, -32603],
    ]);
    p.input.end();
    await p.running;
    const sent = lines(readFileSync(got, "utf8"));
    expect(sent.length).toBe(CAP + 1);
    // The notification, its bytes as the client wrote them.
    expect(sent.at(-1)).toBe(`[${note}]`);
    // The CAP tracked requests are answered when the agent ends; the refused ones only once.
    const ids = lines(p.out()).map(errorOf).map((r) => r.id);
    expect(ids.length).toBe(CAP + 3);
    expect(new Set(ids).size).toBe(CAP + 3);
  });

  test("client: a batch request under an id the agent still owes is refused and taken out of it", async () => {
    const got = join(scratch().dir, "agent-input");
    // The agent never answers: turnguard answers the silent prompt itself (--turn-timeout).
    const p = inProcessProxy("sh", ["-c", `cat > '${got}'`], { turnTimeoutMs: 200, graceMs: 50 });
    const prompt = (id: number) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "session/prompt",
        params: { sessionId: "s", prompt: [] },
      });
    p.input.write(prompt(2) + "\n");
    await until(() => lines(p.out()).length >= 1);
    expect(errorOf(lines(p.out())[0]).error.message).toContain("turn timed out");
    // The agent still owes id 2: a batch reusing it keeps only its other request.
    p.input.write(`[${prompt(2)},${request(7).trim()}]\n`);
    await until(() => lines(p.out()).length >= 2);
    expect(errorOf(lines(p.out())[1]).id).toBe(2);
    expect(errorOf(lines(p.out())[1]).error.message).toContain("send it under a new id");
    p.input.end();
    await p.running;
    expect(lines(readFileSync(got, "utf8")).at(-1)).toBe(`[${request(7).trim()}]`);
  });

  test("agent: a batch's requests past the cap are answered to it and taken out of the batch", async () => {
    const got = join(scratch().dir, "answers");
    const requests = Array.from({ length: CAP }, (_, i) => request(i + 1, "fs/read")).join("");
    const note = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}';
    const batch = `[${request(201, "fs/read").trim()},${note},${request(202, "fs/read").trim()}]`;
    // The agent asks CAP times, then sends the batch, keeps the first 2 lines it is sent, exits.
    const p = capped("sh", ["-c", `printf '%s' '${requests}${batch}\n'; head -n 2 > '${got}'`]);
    const result = await p.running;
    p.input.end();
    expect(result.exitCode).toBe(0);
    const out = lines(p.out());
    expect(out.length).toBe(CAP + 1);
    expect(out.at(-1)).toBe(`[${note}]`);
    expect(lines(readFileSync(got, "utf8")).map(errorOf).map((r) => r.id)).toEqual([201, 202]);
  });

  test("agent: its requests past the cap are answered to it, not sent to the client", async () => {
    const got = join(scratch().dir, "answers");
    const requests = Array.from({ length: CAP + OVER }, (_, i) => request(i + 1, "fs/read"))
      .join("");
    // The agent asks CAP+OVER times, then keeps the first OVER lines it is sent and exits.
    const p = capped("sh", ["-c", `printf '%s' '${requests}'; head -n ${OVER} > '${got}'`]);
    const result = await p.running;
    p.input.end();
    expect(result.exitCode).toBe(0);
    expect(lines(p.out()).map((l) => JSON.parse(l).id)).toEqual(
      Array.from({ length: CAP }, (_, i) => i + 1),
    );
    const answers = lines(readFileSync(got, "utf8")).map(errorOf);
    expect(answers.map((r) => r.id)).toEqual(Array.from({ length: OVER }, (_, i) => CAP + 1 + i));
    expect(answers.every((r) => r.error.code === -32603)).toBe(true);
  });
});
