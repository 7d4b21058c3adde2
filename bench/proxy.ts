/**
 * Benchmarks of `turnguard proxy` (the compiled binary, dist/turnguard), measured side by
 * side in one run and printed as markdown:
 *
 * - throughput: 200 MB of realistic ACP traffic (a turn's session/update stream) from an
 *   agent through the proxy, against the same bytes through `cat`;
 * - latency: the round trip of small request/response pairs (and of whole small prompt
 *   turns) through the proxy, against a direct connection to the same agent;
 * - memory: peak RSS of the proxy while one 50 MB line passes, by inspection limit.
 *
 * Run: `make build && node_modules/.bin/bun bench/proxy.ts` (add `--quick` for a smoke run;
 * `--throughput [N]` runs only the throughput rounds, N of them, default 7; `--bin PATH`
 * measures another build). The same file
 * also plays the benchmark's helper processes (`--responder`, `--passthrough`).
 */
import { Buffer } from "node:buffer";
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { bun } from "../lib/io/bun_api.ts";
import { machine } from "./machine.ts";

const ROOT = resolve(import.meta.dirname!, "..");
/** `--bin PATH`: another build of turnguard (default: dist/turnguard). */
const BIN = process.argv.includes("--bin")
  ? resolve(process.argv[process.argv.indexOf("--bin") + 1])
  : join(ROOT, "dist/turnguard");
const BUN = join(ROOT, "node_modules/.bin/bun");
const SELF = join(ROOT, "bench/proxy.ts");
/** The benchmark's own helper processes (this file in another role). */
const RESPONDER = [BUN, SELF, "--responder"];
const PASSTHROUGH = [BUN, SELF, "--passthrough"];
const QUICK = process.argv.includes("--quick");
/** `--throughput [N]`: only the throughput rounds (N, default 7), for the goal's ratio. */
const THROUGHPUT_ONLY = process.argv.indexOf("--throughput");
/** The Bun-native copy (bench/floor_copy.ts compiled by bench/goals.ts or here). */
const COPY = join(ROOT, "dist/bench/floor_copy");
const MB = 1024 * 1024;

/** Seeded PRNG (mulberry32): the same traffic every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "the function returns a value when called with an argument and the test suite checks " +
  "that every branch is covered so refactor this module into smaller parts über naïve 日本"
).split(" ");

/**
 * Writes `bytes` of a turn's traffic as a coding agent streams it: message and thought
 * chunks, tool calls with diffs and terminal output, plans, usage; then the prompt's
 * response. Returns the file's size.
 */
function writeTraffic(path: string, bytes: number): number {
  const r = rng(42);
  const int = (n: number) => Math.floor(r() * n);
  const words = (n: number) => Array.from({ length: n }, () => WORDS[int(WORDS.length)]).join(" ");
  const fd = openSync(path, "w");
  let size = 0;
  let batch: string[] = [];
  let tool = 0;
  const update = (u: unknown) =>
    JSON.stringify({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "s1", update: u },
    }) + "\n";
  while (size < bytes) {
    const k = r();
    let line: string;
    if (k < 0.55) {
      line = update({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: words(3 + int(30)) },
      });
    } else if (k < 0.75) {
      line = update({
        sessionUpdate: "agent_thought_chunk",
        content: { type: "text", text: words(5 + int(50)) },
      });
    } else if (k < 0.83) {
      tool++;
      line = update({
        sessionUpdate: "tool_call",
        toolCallId: `call_${tool}`,
        title: `Edit src/module_${int(100)}.ts`,
        kind: "edit",
        status: "pending",
        rawInput: { path: `/repo/src/module_${int(100)}.ts`, instructions: words(20) },
      });
    } else if (k < 0.91) {
      const old = words(80 + int(1200));
      line = update({
        sessionUpdate: "tool_call_update",
        toolCallId: `call_${tool}`,
        status: "completed",
        content: [{
          type: "diff",
          path: `/repo/src/module_${int(100)}.ts`,
          oldText: old,
          newText: old + "\n" + words(40),
        }],
      });
    } else if (k < 0.96) {
      line = update({
        sessionUpdate: "tool_call_update",
        toolCallId: `call_${tool}`,
        status: "completed",
        rawOutput: {
          stdout: Array.from({ length: 10 + int(400) }, () => words(12)).join("\n"),
          exitCode: 0,
        },
      });
    } else if (k < 0.98) {
      line = update({
        sessionUpdate: "plan",
        entries: Array.from(
          { length: 3 + int(6) },
          () => ({ content: words(8), priority: "medium", status: "pending" }),
        ),
      });
    } else {
      line = update({ sessionUpdate: "usage_update", used: int(200_000), size: 200_000 });
    }
    batch.push(line);
    size += Buffer.byteLength(line);
    if (batch.length >= 1000) writeSync(fd, batch.join("")), batch = [];
  }
  batch.push(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { stopReason: "end_turn" } }) + "\n");
  writeSync(fd, batch.join(""));
  closeSync(fd);
  return readFileSync(path).length;
}

const PROMPT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "session/prompt",
  params: { sessionId: "s1", prompt: [{ type: "text", text: "go" }] },
}) + "\n";
const NOT_A_PROMPT = JSON.stringify({ jsonrpc: "2.0", method: "_bench/start" }) + "\n";

const sh = (script: string) => ["sh", "-c", script];
/** An agent that waits for the client's first line, then streams a file. */
const streamer = (file: string, after = "") =>
  `head -n 1 >/dev/null; cat '${file}'${after ? `; ${after}` : ""}`;

/**
 * Runs a command, writes `first` to its stdin, counts its stdout; returns MB/s (first →
 * last byte) and the CPU time it used (user + system, its waited-for children included).
 */
async function throughput(
  cmd: string[],
  first: string,
): Promise<{ mbps: number; bytes: number; cpuMs: number }> {
  const child = bun!.spawn(cmd, { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  child.stdin.write(first);
  await child.stdin.flush();
  let bytes = 0;
  let t0 = 0;
  let t1 = 0;
  for await (const c of child.stdout) {
    const now = performance.now();
    if (bytes === 0) t0 = now;
    bytes += c.length;
    t1 = now;
  }
  const code = await child.exited;
  child.stdin.end();
  if (code !== 0) throw new Error(`${cmd.join(" ")} exited ${code}`);
  const usage = child.resourceUsage()!;
  const cpuMs = (Number(usage.cpuTime.user) + Number(usage.cpuTime.system)) / 1000;
  return { mbps: bytes / MB / ((t1 - t0) / 1000), bytes, cpuMs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Round trips of requests through `cmd`; returns the latencies in ms. */
async function roundTrips(cmd: string[], n: number, kind: "request" | "prompt"): Promise<number[]> {
  const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  let held = "";
  let waiting: ((id: number) => void) | null = null;
  child.stdout.on("data", (c: Buffer) => {
    held += c.toString();
    for (let nl = held.indexOf("\n"); nl !== -1; nl = held.indexOf("\n")) {
      const line = held.slice(0, nl);
      held = held.slice(nl + 1);
      const m = JSON.parse(line);
      if (m.method === undefined && waiting) waiting(m.id);
    }
  });
  const times: number[] = [];
  const warmup = 200;
  for (let i = 0; i < n + warmup; i++) {
    const message = kind === "prompt"
      ? {
        jsonrpc: "2.0",
        id: i,
        method: "session/prompt",
        params: { sessionId: `s${i % 4}`, prompt: [{ type: "text", text: "hi" }] },
      }
      : {
        jsonrpc: "2.0",
        id: i,
        method: "session/set_mode",
        params: { sessionId: "s1", modeId: "code" },
      };
    const t0 = performance.now();
    const answered = new Promise<number>((r) => waiting = r);
    child.stdin.write(JSON.stringify(message) + "\n");
    const id = await answered;
    if (id !== i) throw new Error(`expected the answer to ${i}, got ${id}`);
    if (i >= warmup) times.push(performance.now() - t0);
  }
  child.stdin.end();
  await new Promise((r) => child.once("close", r));
  return times;
}

/** Peak RSS (VmHWM, MiB) of the process `cmd` starts, polled from /proc until it exits. */
function peakRss(cmd: string[], first: string): Promise<{ peakMiB: number; bytes: number }> {
  return new Promise((done) => {
    const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    let peak = 0;
    let bytes = 0;
    const poll = () => {
      try {
        const m = readFileSync(`/proc/${child.pid}/status`, "utf8").match(/VmHWM:\s+(\d+) kB/);
        if (m) peak = Math.max(peak, Number(m[1]) / 1024);
      } catch { /* gone */ }
    };
    const timer = setInterval(poll, 5);
    child.stdout.on("data", (c: Buffer) => bytes += c.length);
    child.stdin.write(first);
    child.once("exit", () => {
      clearInterval(timer);
      child.stdin.destroy();
    });
    child.once("close", () => done({ peakMiB: peak, bytes }));
  });
}

const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/**
 * The Bun-native copy (bench/floor_copy.ts), compiled like turnguard (nothing read from
 * the working directory at start) unless its binary is newer than its source.
 */
function copyFloor(): string {
  const source = join(ROOT, "bench/floor_copy.ts");
  if (!existsSync(COPY) || statSync(COPY).mtimeMs < statSync(source).mtimeMs) {
    mkdirSync(dirname(COPY), { recursive: true });
    const built = spawnSync(BUN, [
      "build",
      "--compile",
      "--no-compile-autoload-dotenv",
      "--no-compile-autoload-bunfig",
      source,
      "--outfile",
      COPY,
    ], { stdio: ["ignore", "ignore", "inherit"] });
    if (built.status !== 0) throw new Error(`could not compile ${source}`);
  }
  return COPY;
}
const f3 = (x: number) => x.toFixed(3);

async function main(): Promise<void> {
  if (!existsSync(BIN)) {
    process.stderr.write(`bench/proxy.ts: ${BIN} not found; run \`make build\` first\n`);
    process.exit(2);
  }
  const dir = mkdtempSync(join(tmpdir(), "turnguard-bench-"));
  const started = Date.now();
  try {
    const traffic = join(dir, "traffic.ndjson");
    const size = writeTraffic(traffic, QUICK ? 20 * MB : 200 * MB);
    const reps = THROUGHPUT_ONLY >= 0
      ? Number(process.argv[THROUGHPUT_ONLY + 1] ?? "") || 7
      : QUICK
      ? 1
      : 3;
    const agent = streamer(traffic);
    const copy = copyFloor();
    const runs: Record<string, number[]> = { cat: [], copy: [], bare: [], turn: [], idle: [] };
    /** Per round: the copy's MiB/s over the proxy's in a turn (how many times longer). */
    const ratios: number[] = [];
    /** Per round: the CPU the proxy spent on the bytes over the copy's (the agent's less). */
    const cpuRatios: number[] = [];
    const cpu: Record<string, number[]> = { agent: [], copy: [], turn: [] };
    for (let i = 0; i < reps; i++) {
      const a = (await throughput(sh(agent), PROMPT)).cpuMs;
      const c = await throughput([copy, ...sh(agent)], PROMPT);
      runs.copy.push(c.mbps);
      const t = await throughput([BIN, "proxy", "--", ...sh(agent)], PROMPT);
      if (t.bytes !== size) throw new Error(`proxy passed ${t.bytes} of ${size} bytes`);
      runs.turn.push(t.mbps);
      ratios.push(c.mbps / t.mbps);
      cpu.agent.push(a);
      cpu.copy.push(c.cpuMs - a);
      cpu.turn.push(t.cpuMs - a);
      cpuRatios.push((t.cpuMs - a) / (c.cpuMs - a));
      if (THROUGHPUT_ONLY >= 0) continue;
      runs.cat.push((await throughput(sh(`(${agent}) | cat`), PROMPT)).mbps);
      runs.bare.push((await throughput([...PASSTHROUGH, ...sh(agent)], PROMPT)).mbps);
      runs.idle.push((await throughput([BIN, "proxy", "--", ...sh(agent)], NOT_A_PROMPT)).mbps);
    }
    const goal =
      `proxy in a turn against the Bun-native copy: ${
        f2(median(ratios))
      }× longer (median of ${reps} alternating rounds; per round ${
        ratios.map(f2).join(", ")
      }); copy ${f1(median(runs.copy))} MiB/s, proxy ${f1(median(runs.turn))} MiB/s (medians); ` +
      `goal ≤ 1.5×. CPU on the bytes (less the agent's ${f1(median(cpu.agent))} ms): copy ${
        f1(median(cpu.copy))
      } ms, proxy ${f1(median(cpu.turn))} ms, ${f2(median(cpuRatios))}× (per round ${
        cpuRatios.map(f2).join(", ")
      })`;
    if (THROUGHPUT_ONLY >= 0) {
      process.stdout.write(
        `Machine: ${machine()}; ${new Date().toISOString()}; load ${loadavg()}; ${
          f1(size / MB)
        } MiB of a turn's session/update stream.\n${goal}\n`,
      );
      return;
    }
    const cat = median(runs.cat);

    const n = QUICK ? 300 : 3000;
    const direct = RESPONDER;
    const proxied = [BIN, "proxy", "--", ...RESPONDER];
    const bare = [...PASSTHROUGH, ...RESPONDER];
    const lat = {
      directReq: await roundTrips(direct, n, "request"),
      bareReq: await roundTrips(bare, n, "request"),
      proxyReq: await roundTrips(proxied, n, "request"),
      directPrompt: await roundTrips(direct, n, "prompt"),
      proxyPrompt: await roundTrips(proxied, n, "prompt"),
    };

    const big = join(dir, "big.ndjson");
    const fd = openSync(big, "w");
    const head =
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"';
    writeSync(fd, head);
    const block = Buffer.alloc(MB, "x");
    for (let i = 0; i < 50; i++) writeSync(fd, block);
    writeSync(fd, '"}}}}\n{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}\n');
    closeSync(fd);
    const small = join(dir, "small.ndjson");
    const sfd = openSync(small, "w");
    writeSync(sfd, '{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}\n');
    closeSync(sfd);
    const mem = {
      bare: await peakRss([...PASSTHROUGH, ...sh(streamer(big, "sleep 0.3"))], PROMPT),
      idle: await peakRss([BIN, "proxy", "--", ...sh(streamer(small, "sleep 0.3"))], PROMPT),
      def: await peakRss([BIN, "proxy", "--", ...sh(streamer(big, "sleep 0.3"))], PROMPT),
      mib1: await peakRss(
        [BIN, "proxy", "--max-line-bytes", String(MB), "--", ...sh(streamer(big, "sleep 0.3"))],
        PROMPT,
      ),
      inspected: await peakRss(
        [
          BIN,
          "proxy",
          "--max-line-bytes",
          String(64 * MB),
          "--",
          ...sh(streamer(big, "sleep 0.3")),
        ],
        PROMPT,
      ),
    };

    const out: string[] = [];
    out.push(
      `Machine: ${machine()}; date: ${new Date().toISOString().slice(0, 10)}; ` +
        `median of ${reps} run(s)${QUICK ? " (quick)" : ""}; total ${
          ((Date.now() - started) / 1000).toFixed(0)
        } s.`,
    );
    out.push("");
    out.push(
      `Throughput, ${f1(size / MB)} MiB of a turn's session/update stream (first → last byte):`,
    );
    out.push("");
    out.push("| path | MiB/s | vs cat |");
    out.push("|---|---:|---:|");
    out.push(`| agent → cat → reader | ${f1(cat)} | 100 % |`);
    out.push(
      `| agent → Bun-native copy (floor, reads nothing) → reader | ${f1(median(runs.copy))} | ${
        f1((100 * median(runs.copy)) / cat)
      } % |`,
    );
    out.push(
      `| agent → bare Bun pass-through (reference, reads nothing) → reader | ${
        f1(median(runs.bare))
      } | ${f1((100 * median(runs.bare)) / cat)} % |`,
    );
    out.push(
      `| agent → turnguard proxy → reader, in a turn (every line read) | ${
        f1(median(runs.turn))
      } | ${f1((100 * median(runs.turn)) / cat)} % |`,
    );
    out.push(
      `| agent → turnguard proxy → reader, no turn running | ${f1(median(runs.idle))} | ${
        f1((100 * median(runs.idle)) / cat)
      } % |`,
    );
    out.push("");
    out.push(goal + ".");
    out.push("");
    out.push(`Round trip, ${n} sequential pairs after 200 warm-up (ms):`);
    out.push("");
    out.push("| pair | direct p50 | direct p99 | via p50 | via p99 | added p50 | added p99 |");
    out.push("|---|---:|---:|---:|---:|---:|---:|");
    for (
      const [name, d, p] of [
        ["request → result, via bare Bun pass-through (reference)", lat.directReq, lat.bareReq],
        ["request → result, via turnguard proxy", lat.directReq, lat.proxyReq],
        [
          "session/prompt → chunk + end_turn, via turnguard proxy",
          lat.directPrompt,
          lat.proxyPrompt,
        ],
      ] as const
    ) {
      out.push(
        `| ${name} | ${f3(pct(d, 50))} | ${f3(pct(d, 99))} | ${f3(pct(p, 50))} | ${
          f3(pct(p, 99))
        } | ${f3(pct(p, 50) - pct(d, 50))} | ${f3(pct(p, 99) - pct(d, 99))} |`,
      );
    }
    out.push("");
    out.push("Peak RSS of the proxy (VmHWM) while one 50 MiB line passes, in a turn:");
    out.push("");
    out.push("| case | peak RSS (MiB) |");
    out.push("|---|---:|");
    out.push(`| bare Bun pass-through (reference), 50 MiB line | ${f1(mem.bare.peakMiB)} |`);
    out.push(`| turnguard proxy, no big line (its baseline) | ${f1(mem.idle.peakMiB)} |`);
    out.push(`| 50 MiB line, default limit (32 MiB): passed unread | ${f1(mem.def.peakMiB)} |`);
    out.push(`| 50 MiB line, --max-line-bytes 1 MiB: passed unread | ${f1(mem.mib1.peakMiB)} |`);
    out.push(`| 50 MiB line, --max-line-bytes 64 MiB: inspected | ${f1(mem.inspected.peakMiB)} |`);
    process.stdout.write(out.join("\n") + "\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The agent of the latency benchmark: answers every request on the spot. A
 * `session/prompt` gets one streamed chunk and `end_turn`; anything else an empty result.
 */
function responder(): void {
  const chunk = (sessionId: string) =>
    JSON.stringify({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "ok" } },
      },
    }) + "\n";
  let held = "";
  process.stdin.on("data", (data: Buffer) => {
    held += data.toString();
    let out = "";
    for (let nl = held.indexOf("\n"); nl !== -1; nl = held.indexOf("\n")) {
      const line = held.slice(0, nl);
      held = held.slice(nl + 1);
      if (!line.trim()) continue;
      const message = JSON.parse(line);
      if (message.id === undefined || message.method === undefined) continue;
      const result = message.method === "session/prompt" ? { stopReason: "end_turn" } : {};
      if (message.method === "session/prompt") out += chunk(message.params.sessionId);
      out += JSON.stringify({ jsonrpc: "2.0", id: message.id, result }) + "\n";
    }
    if (out) process.stdout.write(out);
  });
}

/**
 * The reference: the least a Bun program can do between a client and an agent — spawn the
 * agent and copy both streams with node:child_process and process.stdout, reading nothing.
 * It shows what the runtime's stdio itself costs.
 */
function passthrough(command: string[]): void {
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  process.stdin.pipe(child.stdin);
  child.stdin.on("error", () => {});
  child.stdout.on("data", (chunk: Uint8Array) => {
    if (!process.stdout.write(chunk)) {
      child.stdout.pause();
      process.stdout.once("drain", () => child.stdout.resume());
    }
  });
  child.once("close", (code) => process.stdout.write("", () => process.exit(code ?? 1)));
}

const role = process.argv[2];
if (role === "--responder") responder();
else if (role === "--passthrough") passthrough(process.argv.slice(3));
else await main();
