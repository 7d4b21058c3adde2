/**
 * Records the real-agent corpus: for each agent and scenario, starts the mock model API, runs
 * the installed agent in a throwaway HOME, drives one turn over ACP (initialize, authenticate,
 * session/new, session/prompt) and writes every line in both directions, stderr, the mock's
 * requests and the files the agent wrote under HOME into tests/agents/corpus/AGENT/SCENARIO.jsonl.
 *
 * Run it inside a loopback-only network namespace (`make corpus` does:
 * `unshare -rn sh -c 'ip link set lo up && bun tests/agents/record/record.ts'`).
 * Usage: record.ts [--agent NAME]... [--scenario NAME]...
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { AGENTS, type AgentSpec, installDir } from "./agents.ts";
import { startMock } from "./mock_api.ts";
import { PROMPT, type Scenario, SCENARIOS } from "./scenarios.ts";
import type { TranscriptEvent, TranscriptHeader } from "../transcript.ts";

const CORPUS = resolve(import.meta.dir, "..", "corpus");
/** The bound on one turn; after it the recorder cancels, then kills. */
const TURN_MS = Number(process.env.CORPUS_TURN_MS || 60_000);
/** A recorded file keeps at most its last 128 KiB (after long strings were shortened). */
const FILE_CAP = 128 * 1024;

/** Shortens a string value: long ones (system prompts, tool listings) keep their head. */
function shortString(s: string): string {
  return s.length > 300 ? `${s.slice(0, 300)}…[${s.length} chars]` : s;
}

/**
 * Shortens the long string values inside each JSON line of a file (session records carry the
 * whole system prompt); other lines stay as they are. The structure of every line is kept.
 */
function shrinkLines(text: string): string {
  return text.split("\n").map((line) => {
    if (line.length <= 1000 || !line.startsWith("{")) return line;
    try {
      return JSON.stringify(
        JSON.parse(line),
        (_k, v) => (typeof v === "string" ? shortString(v) : v),
      );
    } catch {
      return line;
    }
  }).join("\n");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A closed loopback port: bound, then released. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Files under `dir` (recursively) with their mtimes, skipping caches the agent never writes per turn. */
function listFiles(dir: string, out: Map<string, number> = new Map()): Map<string, number> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name === "node_modules" || e.name === ".npm") continue;
      listFiles(p, out);
    } else if (e.isFile()) {
      try {
        out.set(p, statSync(p).mtimeMs);
      } catch { /* gone */ }
    }
  }
  return out;
}

interface Driver {
  send(method: string, params: unknown): Promise<{ result?: unknown; error?: unknown }>;
  notify(method: string, params: unknown): void;
}

async function recordOne(agent: AgentSpec, scenario: Scenario): Promise<void> {
  const behavior = scenario.behavior[agent.provider];
  if (!behavior) return;
  const mock = await startMock(scenario);
  const port = scenario.refused ? await closedPort() : mock.port;
  const baseUrl = `http://127.0.0.1:${port}`;
  const home = mkdtempSync(join(tmpdir(), `corpus-${agent.name}-`));
  const project = join(home, "project");
  mkdirSync(project, { recursive: true });
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    USER: "corpus",
    TERM: "dumb",
    LANG: "C.UTF-8",
    TMPDIR: join(home, "tmp"),
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    NO_COLOR: "1",
    ...agent.setup(home, baseUrl),
  };
  mkdirSync(env.TMPDIR, { recursive: true });
  const before = listFiles(home);
  const events: TranscriptEvent[] = [];
  const t0 = Date.now();
  const at = () => Date.now() - t0;
  const exe = join(installDir(agent), "node_modules", ".bin", agent.bin);
  const child: ChildProcess = spawn(exe, agent.args, {
    cwd: project,
    env,
    stdio: ["pipe", "pipe", "pipe"],
    detached: true, // its own process group: npm's launcher scripts spawn the real binary
  });
  const kill = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch { /* gone */ }
  };
  let exited: { code: number | null; signal: string | null } | null = null;
  const exit = new Promise<void>((r) =>
    child.on("close", (code, signal) => {
      exited = { code, signal };
      r();
    })
  );
  child.on(
    "error",
    (e) => events.push({ t: at(), dir: "meta", line: `spawn error: ${e.message}` }),
  );
  const pending = new Map<number, (m: { result?: unknown; error?: unknown }) => void>();
  let nextId = 0;
  const write = (obj: unknown) => {
    const line = JSON.stringify(obj);
    events.push({ t: at(), dir: "c2a", line });
    child.stdin!.write(`${line}\n`);
  };
  let buf = "";
  child.stdout!.on("data", (c: Buffer) => {
    buf += c.toString("utf8");
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      events.push({ t: at(), dir: "a2c", line });
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof msg.method === "string" && msg.id !== undefined) {
        // A request from the agent: permissions are cancelled, everything else is unsupported.
        if (msg.method === "session/request_permission") {
          write({ jsonrpc: "2.0", id: msg.id, result: { outcome: { outcome: "cancelled" } } });
        } else {
          write({
            jsonrpc: "2.0",
            id: msg.id,
            error: { code: -32601, message: `Method not found: ${msg.method}` },
          });
        }
      } else if (msg.id !== undefined && typeof msg.id === "number" && pending.has(msg.id)) {
        pending.get(msg.id)!(msg as { result?: unknown; error?: unknown });
        pending.delete(msg.id);
      }
    }
  });
  let errBuf = "";
  child.stderr!.on("data", (c: Buffer) => {
    errBuf += c.toString("utf8");
    let nl;
    while ((nl = errBuf.indexOf("\n")) >= 0) {
      events.push({ t: at(), dir: "stderr", line: errBuf.slice(0, nl) });
      errBuf = errBuf.slice(nl + 1);
    }
  });
  const driver: Driver = {
    send(method, params) {
      const id = nextId++;
      return new Promise((r) => {
        pending.set(id, r);
        write({ jsonrpc: "2.0", id, method, params });
      });
    },
    notify(method, params) {
      write({ jsonrpc: "2.0", method, params });
    },
  };
  const within = <T>(p: Promise<T>, ms: number): Promise<T | "timeout"> =>
    Promise.race([
      p,
      sleep(ms).then(() => "timeout" as const),
      exit.then(() => "timeout" as const),
    ]);
  let note = "";
  try {
    const init = await within(
      driver.send("initialize", {
        protocolVersion: 1,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "turnguard-corpus", version: "1" },
      }),
      30_000,
    );
    if (init === "timeout") throw new Error("initialize: no answer");
    if (agent.authenticate) {
      const auth = await within(driver.send("authenticate", agent.authenticate), 30_000);
      if (auth === "timeout") throw new Error("authenticate: no answer");
    }
    const sess = await within(driver.send("session/new", { cwd: project, mcpServers: [] }), 30_000);
    if (sess === "timeout") throw new Error("session/new: no answer");
    const sessionId = (sess.result as { sessionId?: string } | undefined)?.sessionId;
    if (!sessionId) throw new Error("session/new: no session id");
    const turn = driver.send("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: PROMPT }],
    });
    const r = await within(turn, TURN_MS);
    if (r === "timeout" && !exited) {
      note = `no prompt answer within ${TURN_MS} ms: session/cancel sent`;
      driver.notify("session/cancel", { sessionId });
      await within(turn, 10_000);
    }
  } catch (e) {
    note = (e as Error).message;
  }
  await sleep(1500); // late writes of session files and logs
  child.stdin!.end();
  if ((await within(exit, 5000)) === "timeout") kill("SIGTERM");
  if ((await within(exit, 3000)) === "timeout") kill("SIGKILL");
  await within(exit, 3000);
  kill("SIGKILL"); // whatever of the group is left
  if (errBuf) events.push({ t: at(), dir: "stderr", line: errBuf });
  if (buf) events.push({ t: at(), dir: "a2c", line: buf });
  for (const req of mock.seen) {
    events.push({ t: req.t - t0, dir: "api", line: JSON.stringify({ ...req, t: req.t - t0 }) });
  }
  await mock.close();
  for (const [path, mtime] of listFiles(home)) {
    if (before.get(path) === mtime) continue;
    const rel = relative(home, path);
    if (
      rel.startsWith("tmp/") || rel.startsWith(".cache/") || rel.startsWith(".codex/tmp/") ||
      // codex unpacks its built-in skills into CODEX_HOME at every start: not the turn's.
      rel.startsWith(".codex/skills/")
    ) {
      continue;
    }
    const data = readFileSync(path);
    const binary = data.subarray(0, 8192).includes(0);
    const whole = binary ? "" : shrinkLines(data.toString("utf8"));
    const text = whole.length > FILE_CAP ? whole.slice(whole.length - FILE_CAP) : whole;
    events.push({
      t: Math.max(0, Math.round(mtime - t0)),
      dir: "file",
      line: JSON.stringify({
        path: rel.replaceAll(home, "$HOME"),
        size: data.length,
        content: text.replaceAll(home, "$HOME"),
      }),
    });
  }
  events.sort((a, b) => a.t - b.t);
  const header: TranscriptHeader = {
    kind: "turnguard-corpus",
    v: 1,
    agent: agent.name,
    pkg: agent.pkg,
    version: agent.version,
    scenario: scenario.name,
    about: scenario.about,
    recordedAt: new Date(t0).toISOString(),
    exit: exited,
    note: note || undefined,
    home: "$HOME",
  };
  const dir = join(CORPUS, agent.name);
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `${scenario.name}.jsonl`);
  // Paths of the throwaway HOME are written as $HOME everywhere except on the ACP wire and in
  // stderr, which stay exactly as the agent sent them.
  writeFileSync(out, [header, ...events].map((e) => JSON.stringify(e)).join("\n") + "\n");
  rmSync(home, { recursive: true, force: true });
  console.log(
    `${agent.name}/${scenario.name}: ${events.length} events, exit ${JSON.stringify(exited)}${
      note ? ` (${note})` : ""
    }`,
  );
}

async function main() {
  const args = process.argv.slice(2);
  const pick = (flag: string) => args.flatMap((a, i) => (args[i - 1] === flag ? [a] : []));
  const agents = pick("--agent");
  const scenarios = pick("--scenario");
  for (const agent of AGENTS) {
    if (agents.length && !agents.includes(agent.name)) continue;
    if (!existsSync(join(installDir(agent), "node_modules", ".bin", agent.bin))) {
      console.error(
        `${agent.name}: not installed in ${installDir(agent)} (run tests/agents/record/install.sh)`,
      );
      process.exitCode = 1;
      continue;
    }
    for (const s of SCENARIOS) {
      if (scenarios.length && !scenarios.includes(s.name)) continue;
      await recordOne(agent, s);
    }
  }
}

await main();
