/**
 * Every example turnguard shows, run: each subcommand's `--help` examples and every
 * turnguard command line in the code blocks of README.md and docs/*.md
 * (tests/helpers/doc_examples.ts finds them). Each runs through bash, as written, with the
 * compiled binary as `turnguard` on PATH, in a fresh home, next to stand-ins for the agents
 * it names (examples/agents/agy as `agy`, small ACP agents as `gemini`, `claude-agent-acp`,
 * `my-agent`); a transcript's shown output is compared with what it prints.
 *
 * An example found without an entry in EXAMPLES fails, as does an entry whose example is
 * gone; every flag of a synopsis must be a flag of its command.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMMAND_HELP } from "../../lib/cli/command_help.ts";
import { HELP } from "../../lib/cli/help.ts";
import { ensureBinary } from "../helpers/binary.ts";
import { type Finished, homeEnv, ROOT, runProcess } from "../helpers/cli.ts";
import {
  docCommands,
  helpExamples,
  type ShownCommand,
  showsAsDocumented,
} from "../helpers/doc_examples.ts";

setDefaultTimeout(60_000);

let work: string;
let binary: string;
beforeAll(() => {
  binary = ensureBinary();
  work = mkdtempSync(join(tmpdir(), "tg-examples-"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A fresh place for one example: home, cwd (with `examples/`), and a bin dir on PATH. */
class Sandbox {
  readonly root: string;
  readonly home: string;
  readonly cwd: string;
  readonly bin: string;
  readonly journal: string;
  private readonly background: ChildProcess[] = [];

  constructor(name: string) {
    this.root = mkdtempSync(join(work, `${name.replace(/[^\w]+/g, "_").slice(0, 40)}-`));
    this.home = join(this.root, "home");
    this.cwd = join(this.root, "cwd");
    this.bin = join(this.root, "bin");
    for (const d of [this.home, this.cwd, this.bin]) mkdirSync(d);
    symlinkSync(join(ROOT, "examples"), join(this.cwd, "examples"));
    symlinkSync(binary, join(this.bin, "turnguard"));
    symlinkSync(join(ROOT, "examples", "agents", "agy"), join(this.bin, "agy"));
    this.journal = join(this.home, ".state", "turnguard", "journal.jsonl");
  }

  env(extra: Record<string, string> = {}): Record<string, string | undefined> {
    return homeEnv(this.home, { PATH: `${this.bin}:${process.env.PATH}`, ...extra });
  }

  /** A stand-in command on PATH: a shell script. */
  tool(name: string, body: string): void {
    writeFileSync(join(this.bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  }

  /** A stand-in ACP agent on PATH (see ACP_STANDIN). */
  acpAgent(name: string, mode: string): void {
    const file = join(this.root, "acp_standin.mjs");
    writeFileSync(file, ACP_STANDIN);
    this.tool(name, `exec node ${file} ${mode}`);
  }

  /** Runs a line through bash, in the sandbox's cwd. */
  sh(line: string, extra: Record<string, string> = {}): Promise<Finished> {
    return runProcess(["bash", "-c", line], { cwd: this.cwd, env: this.env(extra) });
  }

  /** Starts a line in the background; stopped at the end of the example. */
  start(line: string): ChildProcess {
    const child = spawn("bash", ["-c", `exec ${line}`], {
      cwd: this.cwd,
      env: { ...process.env, ...this.env() } as NodeJS.ProcessEnv,
      stdio: ["ignore", "ignore", "ignore"],
    });
    this.background.push(child);
    return child;
  }

  /** The journal's records. */
  records(): { event: string; name: string; pid: number; [k: string]: unknown }[] {
    if (!existsSync(this.journal)) return [];
    return readFileSync(this.journal, "utf8").split("\n").filter((l) => l.endsWith("}"))
      .map((l) => JSON.parse(l));
  }

  /** Waits until the journal holds `count` records of `event` for `name`. */
  async journaled(name: string, event: string, count = 1): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (this.records().filter((r) => r.name === name && r.event === event).length >= count) {
        return;
      }
      await Bun.sleep(50);
    }
    throw new Error(`no ${event} for ${name} in the journal`);
  }

  async stop(): Promise<void> {
    for (const child of this.background) {
      if (child.exitCode === null && child.signalCode === null) {
        const closed = new Promise((r) => child.once("close", r));
        child.kill("SIGTERM");
        await closed;
      }
    }
  }
}

/**
 * A stand-in ACP agent (newline-delimited JSON-RPC on stdio). Its mode decides the turn:
 * `answer` streams "the answer"; `overloaded` answers the prompt with the JSON-RPC error a
 * backend's 503 becomes; `http429` with an HTTP status as its error code; `agy-quota` ends
 * the turn empty after writing agy's quota error to agy's log.
 */
const ACP_STANDIN = `import { createInterface } from "node:readline";
import { appendFileSync, mkdirSync } from "node:fs";
const mode = process.argv[2];
const send = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1 } });
  if (m.method === "session/new") return send({ jsonrpc: "2.0", id: m.id, result: { sessionId: "s-1" } });
  if (m.method !== "session/prompt") return send({ jsonrpc: "2.0", id: m.id, result: {} });
  if (mode === "overloaded") {
    return send({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: "UNAVAILABLE (code 503): The model is overloaded." } });
  }
  if (mode === "agy-quota") {
    // What agy writes to its glog file when its backend's quota is spent (examples/agents/agy).
    const dir = process.env.HOME + "/.gemini/antigravity-cli/log";
    mkdirSync(dir, { recursive: true });
    appendFileSync(dir + "/cli-acp.log", "E1201 10:00:00.000000 " + process.pid +
      " log.go:398] agent executor error: RESOURCE_EXHAUSTED (code 429): Individual quota reached. Resets in 40h52m46s.\\n");
    return send({ jsonrpc: "2.0", id: m.id, result: { stopReason: "end_turn" } });
  }
  if (mode === "http429") {
    return send({ jsonrpc: "2.0", id: m.id, error: { code: 429, message: "Too Many Requests: rate limit exceeded for this API key" } });
  }
  send({ jsonrpc: "2.0", method: "session/update", params: { sessionId: m.params.sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "the answer" } } } });
  send({ jsonrpc: "2.0", id: m.id, result: { stopReason: "end_turn" } });
});
`;

/** The parts of an ACP message the client below reads. */
interface AcpMessage {
  id?: number;
  method?: string;
  params?: { update?: { content?: { text?: string } } };
  result?: { sessionId?: string; stopReason?: string };
  error?: { code: number; message: string };
}

/** What an ACP client got from one prompt turn through a command line. */
interface AcpTurn {
  code: number | null;
  prompt: AcpMessage;
  text: string;
  stderr: string;
}

/** Runs `line` as an ACP client's agent command: initialize, session/new, one prompt. */
async function acpTurn(box: Sandbox, line: string, extra: Record<string, string> = {}) {
  const child = spawn("bash", ["-c", line], {
    cwd: box.cwd,
    env: { ...process.env, ...box.env(extra) } as NodeJS.ProcessEnv,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c) => (stderr += c));
  const closed = new Promise<number | null>((r) => child.once("close", (c) => r(c)));
  const send = (m: unknown) => child.stdin!.write(JSON.stringify(m) + "\n");
  const messages: AcpMessage[] = [];
  let buffer = "";
  const answered = new Promise<void>((resolve) => {
    child.stdout!.on("data", (c) => {
      buffer += c;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const m: AcpMessage = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        messages.push(m);
        if (m.id === 0) {
          send({
            jsonrpc: "2.0",
            id: 1,
            method: "session/new",
            params: { cwd: box.cwd, mcpServers: [] },
          });
        }
        if (m.id === 1) {
          send({
            jsonrpc: "2.0",
            id: 2,
            method: "session/prompt",
            params: { sessionId: m.result?.sessionId, prompt: [{ type: "text", text: "hi" }] },
          });
        }
        if (m.id === 2) resolve();
      }
    });
    child.once("close", () => resolve());
  });
  send({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: 1, clientCapabilities: {} },
  });
  await answered;
  child.stdin!.end();
  const code = await closed;
  const text = messages.filter((m) => m.method === "session/update").map((m) =>
    m.params?.update?.content?.text ?? ""
  ).join("");
  return { code, prompt: messages.find((m) => m.id === 2) ?? {}, text, stderr } as AcpTurn;
}

/** The shown lines of a transcript, `/etc/turnguard` (where a doc ships files) as `dir`. */
const shownIn = (e: ShownCommand, dir: string) =>
  e.shown.map((l) => l.replaceAll("/etc/turnguard", dir));

function expectShown(actual: string, e: ShownCommand, dir = "") {
  const shown = shownIn(e, dir);
  expect({ key: e.key, actual, matches: showsAsDocumented(actual, shown) }).toEqual({
    key: e.key,
    actual,
    matches: true,
  });
}

/** An agent that fails the way an overloaded backend does, with a 100 s retry hint. */
const OVERLOADED_100S =
  'echo "UNAVAILABLE (code 503): The model is overloaded. Please retry in 100s." >&2; exit 1';

/**
 * A coder turn whose retry waits 100 s (in the background, stopped afterwards), once its
 * failed attempt's end is journaled (it follows the retry_scheduled record).
 */
async function coderRetryWaits(box: Sandbox): Promise<ChildProcess> {
  box.tool("coder-agent", OVERLOADED_100S);
  const ends = box.records().filter((r) => r.name === "coder" && r.event === "turn_ended").length;
  const child = box.start(
    "turnguard run --name coder --retries 2 --retry-max-wait 600 -- coder-agent",
  );
  await box.journaled("coder", "turn_ended", ends + 1);
  return child;
}

/** A coder turn whose turnguard was killed (SIGKILL) while its agent ran. */
async function coderGone(box: Sandbox): Promise<void> {
  const pidFile = join(box.root, "agent.pid");
  box.tool("coder-agent", `echo $$ > ${pidFile}; exec sleep 30`);
  const child = box.start("turnguard run --name coder -- coder-agent");
  await box.journaled("coder", "turn_started");
  while (!existsSync(pidFile) || readFileSync(pidFile, "utf8").trim() === "") await Bun.sleep(20);
  const closed = new Promise((r) => child.once("close", r));
  child.kill("SIGKILL");
  await closed;
  process.kill(Number(readFileSync(pidFile, "utf8")), "SIGKILL");
}

type Check = (e: ShownCommand, box: Sandbox) => Promise<void>;

/** Runs the example and compares its output (stdout, then stderr) with the transcript. */
const transcript = (code: number): Check => async (e, box) => {
  const r = await box.sh(e.command);
  expectShown(r.stdout + r.stderr, e);
  expect({ key: e.key, code: r.code }).toEqual({ key: e.key, code });
};

/**
 * An example of docs/PLUGINS.md's "Teach turnguard a new agent": that section is run step by
 * step, in order, by tests/e2e/plugins_walkthrough.test.ts (each step needs the ones before
 * it). Here: the command stands in that section, and that test still runs the section.
 */
const WALKTHROUGH: Check = (e) => {
  const title = "## Teach turnguard a new agent";
  const doc = readFileSync(join(ROOT, "docs", "PLUGINS.md"), "utf8");
  const start = doc.indexOf(title);
  const end = doc.indexOf("\n## ", start + title.length);
  expect(start).toBeGreaterThan(-1);
  expect(doc.slice(start, end < 0 ? undefined : end)).toContain(`$ ${e.command}\n`);
  const walkthrough = readFileSync(
    join(ROOT, "tests", "e2e", "plugins_walkthrough.test.ts"),
    "utf8",
  );
  expect(walkthrough).toContain(`const TITLE = "${title}";`);
  return Promise.resolve();
};

/** Every example, by key (tests/helpers/doc_examples.ts), and how to run and check it. */
const EXAMPLES: Record<string, Check> = {
  // --- docs/PLUGINS.md "Teach turnguard a new agent" (tests/e2e/plugins_walkthrough.test.ts)
  "docs/PLUGINS.md: turnguard replay --config examples/agents/scribe/records.toml scribe.rec":
    WALKTHROUGH,
  "docs/PLUGINS.md: turnguard replay -v --config examples/agents/scribe/turnguard.toml scribe.rec":
    WALKTHROUGH,
  "docs/PLUGINS.md: turnguard check --config examples/agents/scribe/turnguard.toml": WALKTHROUGH,
  // --- --help
  "--help of run: turnguard run --timeout 600 -- agy --print 'fix the failing test'": async (
    e,
    box,
  ) => {
    const r = await box.sh(e.command);
    expect([r.code, r.stdout]).toEqual([1, ""]);
    expect(r.stderr).toStartWith("turnguard: agy failed (quota): agent executor error:");
    const ok = await box.sh(e.command, { FAKE_AGY: "ok" });
    expect([ok.code, ok.stdout]).toEqual([0, "hi there\n"]);
  },
  "--help of proxy: turnguard proxy --agent gemini -- gemini --experimental-acp": async (
    e,
    box,
  ) => {
    box.acpAgent("gemini", "answer");
    const r = await acpTurn(box, e.command);
    expect([r.code, r.text, r.prompt.result?.stopReason]).toEqual([0, "the answer", "end_turn"]);
    const ended = box.records().find((x) => x.event === "turn_ended");
    expect((ended?.outcome as { agent: string }).agent).toBe("gemini");
  },
  "--help of wait: turnguard wait nightly --print": async (e, box) => {
    const run = await box.sh("turnguard run --name nightly -- agy --print hi", { FAKE_AGY: "ok" });
    expect(run.code).toBe(0);
    const r = await box.sh(e.command);
    expect([r.code, r.stdout]).toEqual([0, "hi there\n"]);
  },
  "--help of log: turnguard log -n 5": async (e, box) => {
    for (let i = 0; i < 6; i++) {
      await box.sh(`turnguard run --name t${i} -- agy --print hi`, { FAKE_AGY: "ok" });
    }
    const r = await box.sh(e.command);
    expect(r.code).toBe(0);
    const names = r.stdout.trim().split("\n").map((l) => l.split(/\s+/)[1]);
    expect(names).toEqual(["t1", "t2", "t3", "t4", "t5"]);
  },
  "--help of retry: turnguard retry nightly": async (e, box) => {
    box.tool("flaky", OVERLOADED_100S);
    box.start("turnguard run --name nightly --retries 1 --retry-max-wait 600 -- flaky");
    await box.journaled("nightly", "retry_scheduled");
    const r = await box.sh(e.command);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/^nightly: retry 1 of 1 runs now \(signalled pid \d+\)\n$/);
    await box.journaled("nightly", "retry_started");
  },
  "--help of scan: turnguard scan --agent agy ~/.gemini/antigravity-cli/log/cli-*.log": async (
    e,
    box,
  ) => {
    expect((await box.sh("turnguard run -- agy --print hi")).code).toBe(1);
    const r = await box.sh(e.command);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /cli-[\d-]+\.log:\d+: agy\.executor \[quota; quota: retry in 40h52m\]/,
    );
  },
  "--help of explain: turnguard explain --kind text 'HTTP 429 Too Many Requests'": async (
    e,
    box,
  ) => {
    const r = await box.sh(e.command);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("winner: generic.rate-limit");
    expect(r.stdout).toContain("category: rate_limit\nretry: rate_limit: retry with backoff\n");
  },
  "--help of explain: turnguard explain 'HTTP 429 Too Many Requests'": async (e, box) => {
    const r = await box.sh(e.command);
    expect(r.code).toBe(1);
    expect(r.stdout).toStartWith("input (log): HTTP 429 Too Many Requests\n");
    expect(r.stdout).toContain("winner: none — no anchor matched");
  },
  "--help of check: turnguard check --config examples/agents/turnguard.toml --verbose": async (
    e,
    box,
  ) => {
    const r = await box.sh(e.command);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("profile example");
    expect(r.stdout).toContain("generic.rate-limit");
  },
  "--help of replay: turnguard replay --verbose examples/recordings/codex-overloaded-then-ok.jsonl":
    async (e, box) => {
      const r = await box.sh(e.command);
      expect(r.code).toBe(0);
      const lines = r.stdout.trim().split("\n").filter((l) => !l.startsWith("  why: "));
      expect(lines).toEqual([
        expect.stringMatching(/^session \S+ turn 1: failed \(/),
        expect.stringMatching(/^session \S+ turn 2: ok; stop end_turn, reply \d+ chars$/),
      ]);
    },
  "README.md: turnguard replay --fail-fast examples/recordings/claude-spend-limit-retried.jsonl":
    async (e, box) => {
      const r = await box.sh(e.command);
      expect(r.code).toBe(0);
      expect(r.stdout.trimEnd().split("\n")).toEqual(e.shown);
    },
  "--help of schema: turnguard schema > outcome.schema.json": async (e, box) => {
    expect((await box.sh(e.command)).code).toBe(0);
    const schema = JSON.parse(readFileSync(join(box.cwd, "outcome.schema.json"), "utf8"));
    expect(schema.properties.status).toBeDefined();
  },
  "--help of types: turnguard types > turnguard.d.ts": async (e, box) => {
    expect((await box.sh(e.command)).code).toBe(0);
    expect(readFileSync(join(box.cwd, "turnguard.d.ts"), "utf8")).toContain("export interface");
  },
  "--help of completions: source <(turnguard completions bash)": async (e, box) => {
    const r = await box.sh(`${e.command}; complete -p turnguard`);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, "complete -F _turnguard turnguard\n", ""]);
  },

  // --- README.md
  'README.md: turnguard run -- agy --print "say hi"': async (e, box) => {
    const r = await box.sh(e.command);
    const exit = e.shown.at(-1);
    expect(exit).toBe("(exit 1)");
    expectShown(r.stdout + r.stderr, { ...e, shown: e.shown.slice(0, -1) });
    expect(r.code).toBe(1);
  },
  "README.md: turnguard wait coder --print": async (e, box) => {
    await coderRetryWaits(box);
    await transcript(1)(e, box);
  },
  "README.md: turnguard types   # the plugin API's TypeScript declarations, for plugins typed without a checkout":
    async (e, box) => {
      const r = await box.sh(e.command);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("export interface PluginModule");
    },

  // --- docs/EVIDENCE.md: the files, named as written, hold recorded sessions.
  "docs/EVIDENCE.md: turnguard scan --kind records --agent claude ~/.claude/projects/-work/0f1e….jsonl":
    async (e, box) => {
      const dir = join(box.home, ".claude", "projects", "-work");
      mkdirSync(dir, { recursive: true });
      copyFileSync(
        join(ROOT, "tests/fixtures/records/claude-agent-acp-ok.jsonl"),
        join(dir, "0f1e….jsonl"),
      );
      const r = await box.sh(e.command);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(": claude.transcript reply final The answer is 4");
      expect(r.stdout).toEndWith(": the last turn shows no failure\n");
    },
  "docs/EVIDENCE.md: turnguard explain --kind records --agent codex - < rollout-….jsonl": async (
    e,
    box,
  ) => {
    copyFileSync(
      join(ROOT, "tests/fixtures/records/codex-acp-ok.jsonl"),
      join(box.cwd, "rollout-….jsonl"),
    );
    const r = await box.sh(e.command);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("<input>:8: codex.rollout reply final The answer is 4");
  },

  // --- docs/JOURNAL.md
  "docs/JOURNAL.md: turnguard wait coder --print #0": async (e, box) => {
    await coderGone(box);
    await transcript(1)(e, box);
  },
  "docs/JOURNAL.md: turnguard wait coder --print #1": async (e, box) => {
    await coderGone(box);
    // The turn's end, cut short at the journal's end (a full disk): its first bytes, up to
    // the start of its Outcome, without a newline.
    const started = readFileSync(box.journal, "utf8").split("\n")[0];
    const head = started.slice(0, started.indexOf('"event"'));
    writeFileSync(box.journal, `${head}"event":"turn_ended","attempt":0,"outcome":{"v":1,"mo`, {
      flag: "a",
    });
    await transcript(5)(e, box);
  },
  "docs/JOURNAL.md: turnguard wait coder --print #2": async (e, box) => {
    box.tool("coder-agent", "echo 'the answer'");
    expect((await box.sh("turnguard run --name coder -- coder-agent")).code).toBe(0);
    await transcript(0)(e, box);
  },
  "docs/JOURNAL.md: turnguard wait coder --print #3": async (e, box) => {
    await coderRetryWaits(box);
    await transcript(1)(e, box);
  },
  "docs/JOURNAL.md: turnguard wait reviewer --print": async (e, box) => {
    const run = await box.sh("turnguard run --name reviewer -- agy --print hi", {
      FAKE_AGY: "capacity",
    });
    expect(run.code).toBe(1);
    await transcript(1)(e, box);
  },
  "docs/JOURNAL.md: turnguard wait writer --print": async (e, box) => {
    box.tool(
      "writer-agent",
      'echo "partial answer"; echo "UNAVAILABLE (code 503): The model is overloaded." >&2; exit 1',
    );
    await box.sh("turnguard run --name writer --retries 2 -- writer-agent");
    await transcript(1)(e, box);
  },
  "docs/JOURNAL.md: turnguard wait coder --print #4": async (e, box) => {
    // A turn truncated while its agent said end_turn: the proxy's reading of Claude Code's
    // transcript; here its journal records, from an ok turn with the Outcome of such a turn.
    box.tool("coder-agent", "echo 'The answer is'");
    await box.sh("turnguard run --name coder -- coder-agent");
    const lines = readFileSync(box.journal, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    const ended = lines.find((r) => r.event === "turn_ended");
    ended.outcome.status = "truncated";
    ended.outcome.reply = { chars: 13, text: "The answer is" };
    ended.outcome.error = {
      code: 529,
      message:
        'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
      category: "capacity",
      anchor: null,
      source: null,
    };
    writeFileSync(box.journal, lines.map((l) => JSON.stringify(l) + "\n").join(""));
    await transcript(0)(e, box);
  },
  "docs/JOURNAL.md: turnguard log": async (e, box) => {
    await box.sh("turnguard run --name reviewer -- agy --print hi", { FAKE_AGY: "ok" });
    await box.sh("turnguard run --name reviewer -- agy --print hi", { FAKE_AGY: "stderr-fail" });
    const count = join(box.root, "count");
    box.tool(
      "once-overloaded",
      `if [ -e ${count} ]; then echo done; exit 0; fi; touch ${count}
echo "UNAVAILABLE (code 503): The model is overloaded. Please retry in 0.2s." >&2; exit 1`,
    );
    await box.sh("turnguard run --name coder --retries 2 -- once-overloaded");
    await coderRetryWaits(box);
    const r = await box.sh(e.command);
    expect(r.code).toBe(0);
    // Each shown line's columns after the time: name, status, category, retry.
    const columns = (text: string) =>
      text.trim().split("\n").map((l) => {
        const [, name, , , status, category, , ...retry] = l.split(/\s{2,}|\s(?=#)/);
        return [name, status, category, retry.join(" ")];
      });
    expect(columns(r.stdout)).toEqual(columns(e.shown.join("\n")));
  },
  "docs/JOURNAL.md: turnguard retry coder #0": async (e, box) => {
    const owner = await coderRetryWaits(box);
    const closed = new Promise((r) => owner.once("close", r));
    owner.kill("SIGKILL");
    await closed;
    const r = await box.sh(e.command);
    expectShown(r.stdout + r.stderr, { ...e, shown: e.shown.slice(0, 1) });
    expect(r.code).toBe(5);
  },
  "docs/JOURNAL.md: turnguard retry coder #1": async (e, box) => {
    await coderRetryWaits(box);
    await transcript(0)(e, box);
  },

  // --- docs/PLUGINS.md: its anchors.toml is the declarative anchor of its step 2; the
  // shipped pair of step 5 is the code plugin beside a config that names it.
  'docs/PLUGINS.md: turnguard explain --kind log "2026-03-02T10:15:04Z ERROR llm-gateway: budget exhausted for team=payments (spent 500.00 USD of 500.00 USD); window resets in 3h12m"':
    transcript(0),
  "docs/PLUGINS.md: turnguard scan --config anchors.toml agent.log": async (e, box) => {
    const doc = readFileSync(join(ROOT, "docs/PLUGINS.md"), "utf8");
    const anchor =
      /```toml\n(\[\[anchor\]\]\nid = "acme\.gateway-budget"[\s\S]*?)```/.exec(doc)![1];
    writeFileSync(join(box.cwd, "anchors.toml"), anchor);
    copyFileSync(join(ROOT, "examples/plugins/gateway.log"), join(box.cwd, "agent.log"));
    await transcript(0)(e, box);
  },
  "docs/PLUGINS.md: turnguard check --config anchors.toml --verbose": async (e, box) => {
    writeFileSync(join(box.cwd, "anchors.toml"), 'plugins = ["gateway_budget.ts"]\n');
    copyFileSync(
      join(ROOT, "examples/plugins/gateway_budget.ts"),
      join(box.cwd, "gateway_budget.ts"),
    );
    const r = await box.sh(e.command);
    expectShown(r.stdout + r.stderr, e, box.cwd);
    expect(r.code).toBe(0);
  },

  // --- docs/PROXY.md (/tmp/ is the sandbox's)
  "docs/PROXY.md: turnguard proxy --journal /tmp/j.jsonl --name ide -- claude-agent-acp   # the client's agent command":
    async (e, box) => {
      box.acpAgent("claude-agent-acp", "overloaded");
      const r = await acpTurn(box, e.command.replaceAll("/tmp/", `${box.root}/`));
      expect(r.prompt.error?.message).toContain("UNAVAILABLE (code 503): The model is overloaded.");
      // The next line of the block, and what its comment says it prints.
      const wait = await box.sh(
        `turnguard wait ide --print --journal /tmp/j.jsonl`.replaceAll("/tmp/", `${box.root}/`),
      );
      const doc = readFileSync(join(ROOT, "docs/PROXY.md"), "utf8");
      const said = /turnguard wait ide --print --journal \/tmp\/j\.jsonl\n((?:# .*\n)+)/.exec(
        doc,
      )![1]
        .replace(/^# /gm, "");
      expect([wait.code, wait.stdout + wait.stderr]).toEqual([1, said]);
    },
  "docs/PROXY.md: turnguard wait ide --print --journal /tmp/j.jsonl": async () => {
    // Run with the line before it, which writes the journal it reads (above).
  },
  "docs/PROXY.md: turnguard proxy --outcome-file ~/turnguard-outcomes.jsonl -- claude-agent-acp":
    async (e, box) => {
      box.acpAgent("claude-agent-acp", "answer");
      const r = await acpTurn(box, e.command);
      expect([r.code, r.text]).toEqual([0, "the answer"]);
      const file = join(box.home, "turnguard-outcomes.jsonl");
      const outcomes = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
      expect(outcomes.map((o) => [o.mode, o.status, o.reply.text])).toEqual([
        ["proxy", "ok", "the answer"],
      ]);
    },
  'docs/PROXY.md: acpx --agent "turnguard proxy --agent agy --turn-timeout 120 -- agy-acp" exec "fix the tests"':
    async (e, box) => {
      box.acpAgent("agy-acp", "agy-quota");
      symlinkSync(join(ROOT, "node_modules", ".bin", "acpx"), join(box.bin, "acpx"));
      const r = await box.sh(e.command);
      const doc = readFileSync(join(ROOT, "docs/PROXY.md"), "utf8");
      const said = doc.split(e.command + "\n")[1].split("\n")[0].replace(/^# /, "");
      expect(said).toStartWith("[error] RUNTIME: ");
      expect(r.code).toBe(1);
      expect((r.stdout + r.stderr).split("\n")).toContain(said);
    },
  "docs/PROXY.md: turnguard proxy --rewrite-errors -- gemini --experimental-acp": async (
    e,
    box,
  ) => {
    box.acpAgent("gemini", "http429");
    const r = await acpTurn(box, e.command);
    // "Errors in plain JSON-RPC codes": the HTTP status becomes -32603, the message the cause.
    expect(r.prompt.error?.code).toBe(-32603);
    expect(r.prompt.error?.message).toContain("rate limit exceeded for this API key");
  },

  // --- docs/PUBLISH.md: the reply was never published by the agent, so turnguard runs the
  // default fallback, `buzz messages send ...`, once, with the reply on stdin.
  'docs/PUBLISH.md: turnguard proxy --publish-fallback --var channel="$CHANNEL_ID" --var reply_to="$EVENT_ID" -- my-agent --acp':
    async (e, box) => {
      box.acpAgent("my-agent", "answer");
      const got = join(box.root, "buzz.txt");
      box.tool("buzz", `{ echo "$*"; cat; } > ${got}`);
      const r = await acpTurn(box, e.command, { CHANNEL_ID: "C-42", EVENT_ID: "E-7" });
      expect([r.code, r.text]).toEqual([0, "the answer"]);
      expect(readFileSync(got, "utf8")).toBe(
        "messages send --channel C-42 --reply-to E-7 --content -\nthe answer",
      );
    },
};

const help = helpExamples();
const { synopses, examples } = docCommands();
const all = [...help, ...examples];

describe("every example shown to users", () => {
  test("every example found has an entry, and every entry an example", () => {
    const keys = all.map((e) => e.key);
    expect(keys.filter((k) => !(k in EXAMPLES))).toEqual([]);
    expect(Object.keys(EXAMPLES).filter((k) => !keys.includes(k))).toEqual([]);
    // Every subcommand shows at least one.
    for (const name of Object.keys(COMMAND_HELP)) {
      expect({ name, n: COMMAND_HELP[name].examples.length > 0 }).toEqual({ name, n: true });
    }
  });

  test("every flag of a synopsis is a flag of its command (docs and turnguard --help)", () => {
    const usage = HELP.split("\n").filter((l) => /^ {2}turnguard [a-z]+ .*[[|]/.test(l))
      .map((l) => ({ where: "turnguard --help", command: l.trim() }));
    expect(usage.length).toBeGreaterThan(5);
    for (const s of [...synopses, ...usage]) {
      const name = s.command.split(/\s+/)[1];
      const flags = [...Object.keys(COMMAND_HELP[name].flags), "help"];
      const used = [...s.command.matchAll(/(?<![\w-])--([a-z][\w-]*)/g)].map((m) => m[1]);
      expect({ where: s.where, name, unknown: used.filter((f) => !flags.includes(f)) }).toEqual({
        where: s.where,
        name,
        unknown: [],
      });
    }
  });

  for (const e of all) {
    const check = EXAMPLES[e.key];
    if (!check) continue;
    test(e.key, async () => {
      const box = new Sandbox(e.key);
      try {
        await check(e, box);
      } finally {
        await box.stop();
      }
    });
  }
});
