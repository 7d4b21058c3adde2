/**
 * `turnguard replay FILE`: runs a recording (`turnguard proxy --record FILE`, or a corpus
 * transcript) through the whole pipeline with the user's configuration — a real `turnguard
 * proxy` whose agent plays the recorded agent side, fed the recorded client lines in order —
 * and prints each turn's Outcome and why. A plugin author iterates on a profile or a reader
 * without the agent; a user attaches a recording to a bug report.
 *
 * `turnguard replay --fail-fast FILE` shows what `proxy --fail-fast` would have done: turns
 * are played at recorded times (`ReplayOptions.recordedTimes`).
 *
 * `turnguard replay --agent-side FILE` is that agent (what the proxy runs).
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Outcome } from "../core/outcome.ts";
import { EXIT, UsageError } from "../errors.ts";
import { stdoutSink, warnLine } from "../io/output.ts";
import { loadRegistry, selectProfile } from "../config/registry.ts";
import { userConfigPath } from "../config/config.ts";
import { playAgentSide, processPlayerIo } from "../record/player.ts";
import { readTranscript, STDIN_CLOSED, type Transcript } from "../record/transcript.ts";
import { selfArgv } from "../io/self.ts";
import { envRecord, type OptionSpec, parseOptions } from "./args.ts";

/** The flags `turnguard replay` accepts. */
export const REPLAY_OPTIONS = {
  config: { type: "string" },
  agent: { type: "string" },
  json: { type: "boolean" },
  late: { type: "string" },
  verbose: { type: "boolean", short: "v" },
  "agent-side": { type: "boolean" },
  "fail-fast": { type: "boolean" },
  "recorded-times": { type: "boolean" },
} satisfies OptionSpec;

/** What one replay left: the client's received lines, the Outcomes, the proxy's stderr. */
export interface Replayed {
  received: string[];
  /** Each turn's Outcome as the client was answered. */
  outcomes: Outcome[];
  /** Revisions of them, once late session records read differently (`revision` set). */
  revisions: Outcome[];
  stderr: string;
  code: number | null;
}

/** How to replay. */
export interface ReplayOptions {
  /** The profile the proxy runs under (`--agent`); null: none (the generic path). */
  profile: string | null;
  /** The user config file, passed on as `--config`; null: only the built-in config. */
  config: string | null;
  /** Late writes of the records come this many times as late as recorded. */
  lateFactor?: number;
  /** The journal the proxy writes (`--journal`); absent: none (`--no-journal`). */
  journal?: string;
  /** More proxy flags (`--rewrite-errors`, ...). */
  proxyArgs?: readonly string[];
  /** The turnguard to run (default: this one). */
  self?: readonly string[];
  /**
   * Play at recorded times (`--fail-fast`): the agent side keeps the recording's pace, and a
   * client line that follows an unanswered request waits for its recorded time (see
   * `clientLineDue`), so the proxy's live evidence sees the turn as it ran.
   */
  recordedTimes?: boolean;
}

/**
 * Whether the driver sends the next recorded client line now. Unpaced: once the agent lines
 * recorded before it arrived. At recorded times: when nothing the client asked is
 * unanswered, at once (the proxy may have answered a prompt early, `--fail-fast`, and
 * dropped the agent's late answer: no count of lines would come); else once those agent
 * lines arrived and as long after the previous client line as recorded (a client that
 * cancelled a turn after a minute does so after a minute here too).
 */
export function clientLineDue(s: {
  recordedTimes: boolean;
  received: number;
  expected: number;
  pending: number;
  elapsedMs: number;
  recordedGapMs: number;
}): boolean {
  if (!s.recordedTimes) return s.received >= s.expected;
  if (s.pending === 0) return true;
  return s.received >= s.expected && s.elapsedMs >= s.recordedGapMs;
}

/** A JSON-RPC line's id and whether it is a request (has a method), when it is one. */
function rpcOf(line: string): { id: unknown; request: boolean } | null {
  try {
    const m = JSON.parse(line);
    if (typeof m !== "object" || m === null || m.id === undefined || m.id === null) return null;
    return { id: m.id, request: typeof m.method === "string" };
  } catch {
    return null;
  }
}

/**
 * Replays one recording through `turnguard proxy` in a throwaway HOME and collects what came
 * out. The client side is fed line by line, each after the agent lines recorded before it.
 */
export async function replayRecording(
  path: string,
  transcript: Transcript,
  opts: ReplayOptions,
): Promise<Replayed> {
  const self = opts.self ?? selfArgv();
  const dir = mkdtempSync(join(tmpdir(), "turnguard-replay-"));
  try {
    const home = join(dir, "home");
    mkdirSync(home);
    const outcomes = join(dir, "outcomes.jsonl");
    const late = opts.lateFactor !== undefined ? ["--late", String(opts.lateFactor)] : [];
    const child = spawn(
      self[0],
      [
        ...self.slice(1),
        "proxy",
        ...(opts.journal !== undefined ? ["--journal", opts.journal] : ["--no-journal"]),
        ...(opts.profile !== null ? ["--agent", opts.profile] : []),
        ...(opts.config !== null ? ["--config", opts.config] : []),
        "--outcome-file",
        outcomes,
        ...(opts.proxyArgs ?? []),
        "--",
        ...self,
        "replay",
        "--agent-side",
        ...(opts.recordedTimes ? ["--recorded-times"] : []),
        ...late,
        resolve(path),
      ],
      {
        cwd: dir,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          XDG_STATE_HOME: join(home, ".state"),
          TURNGUARD_REPLAY_HOME: home,
        },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    const received: string[] = [];
    /** The ids of the client's requests not answered yet. */
    const pending = new Set<string>();
    let stderr = "";
    let buf = "";
    let wake: (() => void) | null = null;
    // One decoder per stream: a character split between two chunks is decoded whole.
    const out = new TextDecoder();
    const err = new TextDecoder();
    child.stdout!.on("data", (c: Buffer) => {
      buf += out.decode(c, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        received.push(line);
        const rpc = rpcOf(line);
        if (rpc && !rpc.request) pending.delete(JSON.stringify(rpc.id));
        buf = buf.slice(nl + 1);
      }
      wake?.();
    });
    child.stderr!.on("data", (c: Buffer) => (stderr += err.decode(c, { stream: true })));
    child.stdin!.on("error", () => {}); // the proxy may end before it reads everything
    const closed = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    let gone = false;
    void closed.then(() => {
      gone = true;
      wake?.();
    });
    let last = { t: 0, at: Date.now() };
    /** Waits until the client line recorded at `t` is due (`clientLineDue`). */
    const due = (expected: number, t: number) =>
      new Promise<void>((r) => {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const check = () => {
          clearTimeout(timer);
          const state = {
            recordedTimes: opts.recordedTimes === true,
            received: received.length,
            expected,
            pending: pending.size,
            elapsedMs: Date.now() - last.at,
            recordedGapMs: t - last.t,
          };
          if (gone || clientLineDue(state)) return r();
          wake = check;
          // At recorded times the gap runs out with no line arriving: look again then.
          if (state.recordedTimes) {
            timer = setTimeout(check, Math.max(10, state.recordedGapMs - state.elapsedMs));
          }
        };
        check();
      });
    let expectA2c = 0;
    let closedAt: number | null = null;
    for (const e of transcript.events) {
      // What the agent sent after the client closed its stdin comes after the close here too.
      if (e.dir === "meta" && e.line === STDIN_CLOSED) {
        closedAt = e.t;
        break;
      }
      if (e.dir === "a2c") expectA2c++;
      if (e.dir !== "c2a") continue;
      await due(expectA2c, e.t);
      const rpc = rpcOf(e.line);
      if (rpc?.request) pending.add(JSON.stringify(rpc.id));
      last = { t: e.t, at: Date.now() };
      child.stdin!.write(`${e.line}\n`);
    }
    await due(expectA2c, closedAt ?? last.t);
    child.stdin!.end();
    const code = await closed;
    let text = "";
    try {
      text = readFileSync(outcomes, "utf8");
    } catch { /* no turn ended */ }
    const all = text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Outcome);
    return {
      received,
      outcomes: all.filter((o) => o.revision === undefined),
      revisions: all.filter((o) => o.revision !== undefined),
      stderr,
      code,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One line per Outcome: session, turn, status, category and cause, the reply's size. */
export function formatOutcome(o: Outcome, verbose: boolean): string {
  const cause = o.error
    ? ` (${o.error.category}): ${o.error.message}${o.error.anchor ? ` [${o.error.anchor}]` : ""}`
    : "";
  const retry = o.retry?.retryable
    ? ` — retryable${o.retry.afterMs ? `, after ${o.retry.afterMs} ms` : ""}`
    : "";
  const lines = [
    `session ${o.session ?? "-"} turn ${o.turn}${
      o.revision ? ` revised (${o.revision})` : ""
    }: ${o.status}${cause}${retry}; stop ${o.stopReason ?? "-"}, reply ${o.reply.chars} chars`,
  ];
  if (o.endedEarly) lines.push(`  ended early: ${o.endedEarly.reason}`);
  if (verbose) { for (const d of o.diagnostics) lines.push(`  why: ${d}`); }
  return lines.join("\n");
}

/** Parses `--late`: a factor of at least 1. */
function parseLate(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 1 || n > 1000) {
    throw new UsageError(`--late: expected a factor from 1 to 1000, got "${value}"`);
  }
  return n;
}

/** Runs `turnguard replay ARGS` and returns the exit code. */
export async function replayCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseOptions("replay", argv, REPLAY_OPTIONS, true);
  if (positionals.length !== 1) {
    throw new UsageError("replay: name one recording (turnguard replay [OPTIONS] FILE)");
  }
  const path = positionals[0];
  const late = parseLate(values.late);
  const transcript = readTranscript(path);
  if (values["agent-side"]) {
    const home = process.env.TURNGUARD_REPLAY_HOME ?? null;
    await playAgentSide(transcript, processPlayerIo(), {
      home,
      lateFactor: late,
      recordedTimes: values["recorded-times"] === true,
    });
    return 0;
  }
  const env = envRecord();
  const cwd = process.cwd();
  const registry = await loadRegistry({ configFlag: values.config, env, cwd });
  // The recorded profile when this config has it (`--agent` must name one that exists).
  const recorded = transcript.header.profile;
  const profile = selectProfile(
    registry,
    values.agent ??
      (recorded !== undefined && registry.profiles.has(recorded) ? recorded : undefined),
    transcript.header.agent,
  );
  const known = registry.profiles.has(profile.name);
  if (!known) {
    const which = recorded !== undefined
      ? `the recorded profile "${recorded}" is not in the config`
      : `no profile matches agent "${transcript.header.agent}"`;
    warnLine(`turnguard: replay: ${which}: the generic path alone (--agent NAME names one)`);
  }
  const r = await replayRecording(path, transcript, {
    profile: known ? profile.name : null,
    config: userConfigPath(values.config, env, cwd),
    lateFactor: late,
    ...(values["fail-fast"] ? { proxyArgs: ["--fail-fast"], recordedTimes: true } : {}),
  });
  const shown = [...r.outcomes, ...r.revisions];
  if (values.json) { for (const o of shown) void stdoutSink.json(o); }
  else if (r.outcomes.length === 0) void stdoutSink.line("no turn ended");
  else {
    void stdoutSink.line(
      shown.map((o) => formatOutcome(o, values.verbose === true)).join("\n"),
    );
  }
  // The proxy's own words (a config error, a verbose log) when asked, or when nothing ended.
  if (values.verbose || r.outcomes.length === 0) {
    for (const line of r.stderr.split("\n")) if (line.startsWith("turnguard")) warnLine(line);
  }
  return r.code === EXIT.wrapperUsage ? EXIT.usage : 0;
}
