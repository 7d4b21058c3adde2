/**
 * Records the real-agent corpus: for each agent and scenario, starts the mock model API, runs
 * the installed agent in a throwaway HOME, drives one turn over ACP (initialize, authenticate,
 * session/new, session/prompt; a second session/prompt for a two-turn scenario) and writes
 * every line in both directions, stderr, the mock's requests and the files the agent wrote
 * under HOME, write by write, into tests/agents/corpus/AGENT/SCENARIO.jsonl.
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
import { PROMPT, PROMPT_AGAIN, type Scenario, SCENARIOS } from "./scenarios.ts";
import { STDIN_CLOSED, type TranscriptEvent, type TranscriptHeader } from "../transcript.ts";

const CORPUS = resolve(import.meta.dir, "..", "corpus");
/** The bound on one turn; after it the recorder cancels, then kills. */
const TURN_MS = Number(process.env.CORPUS_TURN_MS || 60_000);
/** The bound on each start-up request (initialize, authenticate, session/new). */
const START_MS = Number(process.env.CORPUS_START_MS || 90_000);
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

/** Whether a HOME-relative path is outside what the corpus keeps (caches, unpacked skills). */
function skipped(rel: string): boolean {
  return rel.startsWith("tmp/") || rel.startsWith(".cache/") || rel.startsWith(".codex/tmp/") ||
    // codex unpacks its built-in skills into CODEX_HOME at every start: not the turn's.
    rel.startsWith(".codex/skills/") || rel.includes("node_modules/") || rel.startsWith(".npm/") ||
    // Claude Code's atomic writes of ~/.claude.json: a temporary file and a backup per write.
    /\.claude\.json\.(tmp|backup)\./.test(rel);
}

/** Files under `home` (recursively) with their mtimes and sizes, skipping what is not kept. */
function listFiles(
  home: string,
  dir = home,
  out: Map<string, { mtime: number; size: number }> = new Map(),
): Map<string, { mtime: number; size: number }> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    const rel = relative(home, p);
    if (e.isDirectory()) {
      if (!skipped(`${rel}/`)) listFiles(home, p, out);
    } else if (e.isFile() && !skipped(rel)) {
      try {
        const st = statSync(p);
        out.set(p, { mtime: st.mtimeMs, size: st.size });
      } catch { /* gone */ }
    }
  }
  return out;
}

/** A file as the watcher last saw it. */
interface Seen {
  mtime: number;
  size: number;
  /** Its text up to the last newline recorded (null: binary). */
  text: string | null;
}

/**
 * Watches the files the agent writes under HOME, write by write: each look (at every ACP line
 * the agent sends, and every 20 ms) records what changed since the last one — the complete
 * lines appended to a file (`append`), or the whole file when it was rewritten. Binary files
 * (sqlite databases) are recorded by name once, at the end. Paths of HOME become `$HOME`.
 */
class FileWatch {
  #seen = new Map<string, Seen>();
  #binary = new Map<string, { mtime: number; size: number }>();
  constructor(
    private home: string,
    private push: (line: string) => void,
  ) {
    for (const [path, st] of listFiles(home)) {
      let text: string | null = null;
      try {
        const data = readFileSync(path);
        text = data.subarray(0, 8192).includes(0) ? null : data.toString("utf8");
      } catch { /* gone */ }
      this.#seen.set(path, { ...st, text });
    }
  }

  /** Records what changed since the last look; `final`: a last line without newline too. */
  look(final = false): void {
    for (const [path, st] of listFiles(this.home)) {
      const was = this.#seen.get(path);
      if (was && was.mtime === st.mtime && was.size === st.size && !final) continue;
      let data: Buffer;
      try {
        data = readFileSync(path);
      } catch {
        continue;
      }
      if (data.subarray(0, 8192).includes(0) || was?.text === null) {
        this.#seen.set(path, { ...st, text: null });
        if (!was || was.mtime !== st.mtime) this.#binary.set(path, st);
        continue;
      }
      const now = data.toString("utf8");
      const old = was?.text;
      const grew = typeof old === "string" && now.startsWith(old);
      const from = grew ? old.length : 0;
      // JSONL files are taken line by line (a line caught half-written waits for its end);
      // other files whole.
      const end = final || !path.endsWith(".jsonl") ? now.length : now.lastIndexOf("\n") + 1;
      if (end <= from) continue;
      this.#seen.set(path, { ...st, text: now.slice(0, end) });
      const text = shrinkLines(now.slice(from, end));
      const kept = text.length > FILE_CAP ? text.slice(text.length - FILE_CAP) : text;
      this.push(JSON.stringify({
        path: relative(this.home, path).replaceAll(this.home, "$HOME"),
        size: data.length,
        content: kept.replaceAll(this.home, "$HOME"),
        ...(grew ? { append: true } : {}),
      }));
    }
  }

  /** The binary files that changed, by name, with their last mtime. */
  binaries(): { line: string; mtime: number }[] {
    return [...this.#binary].map(([path, st]) => ({
      mtime: st.mtime,
      line: JSON.stringify({
        path: relative(this.home, path).replaceAll(this.home, "$HOME"),
        size: st.size,
        content: "",
      }),
    }));
  }
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
    // The agent's install comes first: a runtime or an adapted agent installed with it.
    PATH: `${join(installDir(agent), "node_modules", ".bin")}:${
      process.env.PATH ?? "/usr/bin:/bin"
    }`,
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
  if (scenario.agentRetries === "default") {
    for (const name of agent.retryBounds ?? []) delete env[name];
  }
  mkdirSync(env.TMPDIR, { recursive: true });
  const events: TranscriptEvent[] = [];
  const t0 = Date.now();
  const at = () => Date.now() - t0;
  const watch = new FileWatch(home, (line) => events.push({ t: at(), dir: "file", line }));
  const ticker = setInterval(() => watch.look(), 20);
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
      watch.look(); // what the agent wrote before it sent this line comes before it
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
      START_MS,
    );
    if (init === "timeout") throw new Error("initialize: no answer");
    if (agent.authenticate) {
      const auth = await within(driver.send("authenticate", agent.authenticate), START_MS);
      if (auth === "timeout") throw new Error("authenticate: no answer");
    }
    const sess = await within(
      driver.send("session/new", { cwd: project, mcpServers: [] }),
      START_MS,
    );
    if (sess === "timeout") throw new Error("session/new: no answer");
    const sessionId = (sess.result as { sessionId?: string } | undefined)?.sessionId;
    if (!sessionId) throw new Error("session/new: no session id");
    const prompts = scenario.then ? [PROMPT, PROMPT_AGAIN] : [PROMPT];
    for (const [i, text] of prompts.entries()) {
      if (i > 0) {
        await sleep(1500); // the first turn's late writes land before the second prompt
        mock.nextTurn();
      }
      const turn = driver.send("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
      const turnMs = scenario.turnMs ?? TURN_MS;
      const r = await within(turn, turnMs);
      if (r === "timeout" && !exited) {
        note = `no prompt answer within ${turnMs} ms: session/cancel sent`;
        driver.notify("session/cancel", { sessionId });
        await within(turn, 10_000);
        break;
      }
    }
  } catch (e) {
    note = (e as Error).message;
  }
  await sleep(1500); // late writes of session files and logs
  events.push({ t: at(), dir: "meta", line: STDIN_CLOSED });
  child.stdin!.end();
  if ((await within(exit, 5000)) === "timeout") kill("SIGTERM");
  if ((await within(exit, 3000)) === "timeout") kill("SIGKILL");
  await within(exit, 3000);
  kill("SIGKILL"); // whatever of the group is left
  clearInterval(ticker);
  watch.look(true);
  for (const { line, mtime } of watch.binaries()) {
    events.push({ t: Math.max(0, Math.round(mtime - t0)), dir: "file", line });
  }
  if (errBuf) events.push({ t: at(), dir: "stderr", line: errBuf });
  if (buf) events.push({ t: at(), dir: "a2c", line: buf });
  for (const req of mock.seen) {
    events.push({ t: req.t - t0, dir: "api", line: JSON.stringify({ ...req, t: req.t - t0 }) });
  }
  await mock.close();
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
    files: "writes",
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
        `${agent.name}: not installed in ${installDir(agent)} (run make corpus-install)`,
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
