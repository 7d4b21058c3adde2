/**
 * `turnguard replay FILE`: runs a recording (`turnguard proxy --record FILE`, or a corpus
 * transcript) through the whole pipeline with the user's configuration — a real `turnguard
 * proxy` whose agent plays the recorded agent side, fed the recorded client lines in order —
 * and prints each turn's Outcome and why. A plugin author iterates on a profile or a reader
 * without the agent; a user attaches a recording to a bug report.
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
} satisfies OptionSpec;

/** What one replay left: the client's received lines, the Outcomes, the proxy's stderr. */
export interface Replayed {
  received: string[];
  outcomes: Outcome[];
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
        received.push(buf.slice(0, nl));
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
    const receivedAtLeast = (n: number) =>
      new Promise<void>((r) => {
        const check = () => (received.length >= n || gone ? r() : (wake = check));
        check();
      });
    let expectA2c = 0;
    for (const e of transcript.events) {
      // What the agent sent after the client closed its stdin comes after the close here too.
      if (e.dir === "meta" && e.line === STDIN_CLOSED) break;
      if (e.dir === "a2c") expectA2c++;
      if (e.dir !== "c2a") continue;
      await receivedAtLeast(expectA2c);
      child.stdin!.write(`${e.line}\n`);
    }
    await receivedAtLeast(expectA2c);
    child.stdin!.end();
    const code = await closed;
    let text = "";
    try {
      text = readFileSync(outcomes, "utf8");
    } catch { /* no turn ended */ }
    return {
      received,
      outcomes: text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Outcome),
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
    `session ${o.session ?? "-"} turn ${o.turn}: ${o.status}${cause}${retry}; stop ${
      o.stopReason ?? "-"
    }, reply ${o.reply.chars} chars`,
  ];
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
    await playAgentSide(transcript, processPlayerIo(), { home, lateFactor: late });
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
  });
  if (values.json) { for (const o of r.outcomes) void stdoutSink.json(o); }
  else if (r.outcomes.length === 0) void stdoutSink.line("no turn ended");
  else {
    void stdoutSink.line(
      r.outcomes.map((o) => formatOutcome(o, values.verbose === true)).join("\n"),
    );
  }
  // The proxy's own words (a config error, a verbose log) when asked, or when nothing ended.
  if (values.verbose || r.outcomes.length === 0) {
    for (const line of r.stderr.split("\n")) if (line.startsWith("turnguard")) warnLine(line);
  }
  return r.code === EXIT.wrapperUsage ? EXIT.usage : 0;
}
