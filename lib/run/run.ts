/**
 * `turnguard run`: the print-mode wrapper. Snapshots the agent's logs, runs it with its
 * streams passed through byte for byte, forwards signals, then scans, decides and emits.
 */
import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { classify, timeoutCause } from "../cause/classify.ts";
import type { Profile } from "../config/config.ts";
import { type Cause, decide, type Decision, type TurnFacts } from "../core/decide.ts";
import { buildOutcome, type OutcomeParts } from "../core/build_outcome.ts";
import { retryHint } from "../core/retry_hint.ts";
import { EXIT } from "../errors.ts";
import { commandProblem } from "../agent/spawn_problem.ts";
import { findLogCause, readTurnLogs, snapshotProfileLogs } from "../cause/log_cause.ts";
import { ReadBudget } from "../io/bounded_read.ts";
import type { LogFs } from "../io/logfs.ts";
import type { Outcome } from "../core/outcome.ts";
import type { Classifier } from "../cause/classifier.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import {
  forwardSignalsFromSpawn,
  killGroup,
  ownGroup,
  signalExitCode,
  type Signallable,
  stopGroupOnExit,
} from "../agent/signals.ts";
import { capUtf8, formatDuration, lastLines } from "../text/text.ts";
import { Head, Tail } from "../text/byte_window.ts";
import { bun } from "../io/bun_api.ts";
import { type AgentExit, bunPassThrough, type PassThroughTaps } from "./bun_pass_through.ts";
import { drainAfterExit, type DrainPolicy, type DrainSource } from "../agent/exit_drain.ts";
import { StdStream } from "../io/stdio.ts";

export { Tail };

/** Bytes of the agent's stderr kept for the error message. */
export const STDERR_TAIL_BYTES = 8 * 1024;
/** Bytes of reply text kept in an outcome written to a file. */
export const REPLY_TEXT_BYTES = 64 * 1024;
/**
 * Bytes of stdout kept for `reply.text` when `--outcome-json` holds stdout back: memory
 * stays bounded whatever the agent writes; a longer reply is cut and `reply.capped` says so.
 */
export const REPLY_CAPTURE_BYTES = 4 * 1024 * 1024;

/** The agent to start and what turnguard knows of it; shared by run and proxy. */
export interface AgentLaunch {
  command: string;
  args: string[];
  profile: Profile;
  /** The profile's classifier (lib/config/registry.ts `profileClassifier`). */
  classifier: Classifier;
  env: Record<string, string | undefined>;
  cwd?: string;
}

/** How one `run` is wired to the world; tests pass their own streams, env and clock. */
export interface RunOptions extends AgentLaunch {
  /** Keep all of stdout for the outcome instead of passing it through. */
  captureStdout: boolean;
  /**
   * Where the agent's output goes: turnguard's own stdout/stderr (lib/io/stdio.ts: under Bun,
   * the agent then runs through lib/run/bun_pass_through.ts) or any Writable.
   */
  stdout: Writable | StdStream;
  stderr: Writable | StdStream;
  now?: () => number;
  fs?: LogFs;
  turn?: number;
  /** `--timeout`: the agent is stopped after this long (SIGTERM, then SIGKILL). */
  timeoutMs?: number | null;
}

/** After `--timeout`'s SIGTERM, how long the agent has to exit before SIGKILL. */
export const TIMEOUT_KILL_GRACE_MS = 5000;

/** The result of one run: its Outcome and the exit code turnguard should exit with. */
export interface RunResult {
  outcome: Outcome;
  exitCode: number;
  /** Whether turnguard itself surfaced a failure the agent hid. */
  swallowed: boolean;
  /** The agent wrote nothing on stderr, so a failure needs turnguard's own line. */
  stderrWasEmpty: boolean;
  /** The reader of stdout went away (EPIPE): the agent's failure is the pipeline's doing. */
  readerGone: boolean;
}

/** Classifies a failing agent's stderr into a Cause with the profile's classifier. */
export function stderrCause(
  stderr: string,
  code: number | null,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): Cause | null {
  const message = capUtf8(lastLines(stderr, 3), 500);
  if (!message) return null;
  const { category, retry } = classify(message, undefined, classifier, now, diagnostics);
  return { error: { code, message, category, anchor: null, source: null }, retry };
}

/**
 * Waits for the agent to exit, then for its output streams to end (lib/exit_drain.ts: a
 * grandchild holding them open with nothing moving has its group stopped, then they are
 * closed; never while a stream is paused because its reader is slow).
 */
export function waitForExit(
  child: ChildProcess,
  policy: DrainPolicy,
): Promise<{ code: number | null; signal: string | null; error?: Error }> {
  return new Promise((resolve) => {
    child.once("error", (err) => {
      if (child.pid === undefined) resolve({ code: null, signal: null, error: err });
    });
    child.once("exit", async (code, signal) => {
      const streams = [child.stdout, child.stderr].filter((s): s is Readable =>
        s !== null && !s.readableEnded && !s.destroyed
      );
      const sources = streams.map(nodeDrainSource);
      await drainAfterExit(sources, Promise.all(sources.map((s) => s.closed)), policy);
      for (const s of sources) s.detach();
      resolve({ code, signal });
    });
  });
}

/** A Node Readable as the drain watches it: moved on `data`, busy while paused. */
function nodeDrainSource(stream: Readable): DrainSource & {
  closed: Promise<void>;
  detach(): void;
} {
  const onData = () => void (source.movedAt = Date.now());
  const source = {
    movedAt: Date.now(),
    get busy() {
      return stream.isPaused();
    },
    stop: () => void stream.destroy(),
    closed: new Promise<void>((resolve) => stream.once("close", () => resolve())),
    detach: () => void stream.off("data", onData).destroy(),
  };
  stream.on("data", onData);
  return source;
}

/**
 * Copies `from` to `to` with backpressure, handing each chunk to `observe` first. When
 * `to` breaks (its reader went away: EPIPE), `from` is destroyed so the agent meets a
 * closed pipe as it would in a shell pipeline, instead of blocking on a full one.
 */
function pipeThrough(
  from: Readable,
  to: Writable,
  observe: (chunk: Uint8Array) => void,
  onBroken: () => void = () => {},
): void {
  let broken = false;
  const onError = () => {
    broken = true;
    onBroken();
    from.destroy();
  };
  to.on("error", onError);
  from.on("data", (chunk: Uint8Array) => {
    observe(chunk);
    if (broken) return;
    if (!to.write(chunk)) {
      from.pause();
      to.once("drain", () => from.resume());
    }
  });
  from.once("close", () => to.off("error", onError));
}

/** Runs one agent turn in print mode. */
export async function runTurn(opts: RunOptions): Promise<RunResult> {
  const now = opts.now ?? Date.now;
  const diagnostics: string[] = [];
  const snapshot = snapshotProfileLogs(opts.profile, opts.env, now(), opts.fs);
  const startedAt = now();
  let cancelled = false;
  // Armed once the agent started (the `spawned` tap); typed so that the closure may set it.
  let deadline = null as Deadline | null;
  const stderrTail = new Tail(STDERR_TAIL_BYTES);
  const kept = new Head(opts.captureStdout ? REPLY_CAPTURE_BYTES : REPLY_TEXT_BYTES);
  let outBytes = 0;
  let meaningful = false;
  let readerGone = false;
  const decoder = new TextDecoder();
  let chars = 0;

  const taps = {
    stdout: (chunk: Uint8Array) => {
      outBytes += chunk.length;
      meaningful ||= hasNonSpace(chunk);
      chars += decoder.decode(chunk, { stream: true }).length;
      kept.push(chunk);
    },
    stderr: (chunk: Uint8Array) => stderrTail.push(chunk),
    readerGone: () => {
      readerGone = true;
      diagnostics.push("the reader of stdout went away (broken pipe); the agent's output was cut");
    },
    signalled: () => {
      cancelled = true;
    },
    spawned: (child: Signallable) => {
      if (opts.timeoutMs) deadline = stopAfter(child, opts.timeoutMs);
    },
  };
  const exit = bun && opts.stdout instanceof StdStream && opts.stderr instanceof StdStream
    ? await bunPassThrough(opts, opts.captureStdout ? null : opts.stdout, opts.stderr, taps)
    : await nodePassThrough(opts, taps);
  deadline?.clear();
  chars += decoder.decode().length;
  const endedAt = now();

  if (exit.error && exit.pid === undefined) {
    return spawnFailure(opts, exit.error, startedAt, endedAt, diagnostics);
  }

  // The logs are read off the main thread, within the turn's read budget.
  const scan = await readTurnLogs(opts.profile, snapshot, startedAt, new ReadBudget(), opts.fs);
  // One code plugin budget for everything that decides the turn.
  const { log, agentError } = withPluginBudget(() => {
    const log = findLogCause({
      snapshot,
      scan,
      pid: exit.pid ?? null,
      profile: opts.profile,
      classifier: opts.classifier,
      now: endedAt,
    });
    diagnostics.push(...log.diagnostics);
    const failedItself = exit.signal !== null || (exit.code !== null && exit.code !== 0);
    const agentError = failedItself
      ? stderrCause(stderrTail.text(), exit.code, opts.classifier, endedAt, diagnostics)
      : null;
    return { log, agentError };
  });
  const facts: TurnFacts = {
    cancelled,
    exit: { code: exit.code, signal: exit.signal },
    stopReason: null,
    agentError,
    output: outBytes,
    outputBlank: !meaningful,
    logCause: log.cause,
    timeout: deadline?.expired()
      ? timeoutCause(`turn timed out: stopped after ${formatDuration(opts.timeoutMs!)} (--timeout)`)
      : null,
  };
  const decision = decide(facts);
  if (opts.captureStdout && kept.truncated) {
    diagnostics.push(
      `stdout was ${outBytes} bytes; reply.text keeps its first ${REPLY_CAPTURE_BYTES} (reply.capped)`,
    );
  }
  const outcome = runOutcome(opts, {
    startedAt,
    endedAt,
    exit: { code: exit.code, signal: exit.signal },
    reply: { chars, text: kept.text(), ...(kept.truncated ? { capped: true } : {}) },
    diagnostics,
  }, decision);
  let exitCode = 0;
  if (deadline?.expired()) exitCode = EXIT.timeout;
  else if (exit.signal !== null) exitCode = signalExitCode(exit.signal);
  else if (exit.code !== null && exit.code !== 0) exitCode = exit.code;
  else if (decision.status === "failed") exitCode = EXIT.failed;
  return {
    outcome,
    exitCode,
    swallowed: decision.swallowed,
    stderrWasEmpty: stderrTail.text().trim() === "",
    readerGone,
  };
}

/**
 * The portable pass-through (Deno, and callers with streams of their own): the agent
 * through node:child_process, its output copied with backpressure.
 */
async function nodePassThrough(opts: RunOptions, taps: PassThroughTaps): Promise<AgentExit> {
  const writable = (s: Writable | StdStream) => s instanceof StdStream ? s.writable() : s;
  // Loaded here: under Bun, a run never needs node:child_process.
  const { spawn } = process.getBuiltinModule("node:child_process");
  const detached = ownGroup();
  // Installed before the spawn (see bunPassThrough).
  const forwarding = forwardSignalsFromSpawn(taps.signalled);
  const child = spawn(opts.command, opts.args, {
    stdio: ["inherit", "pipe", "pipe"],
    env: opts.env as NodeJS.ProcessEnv,
    cwd: opts.cwd,
    detached,
  });
  forwarding.attach(child);
  if (child.pid !== undefined) taps.spawned?.(child);
  const stopGroup = stopGroupOnExit(child);
  if (opts.captureStdout) child.stdout!.on("data", taps.stdout);
  else pipeThrough(child.stdout!, writable(opts.stdout), taps.stdout, taps.readerGone);
  pipeThrough(child.stderr!, writable(opts.stderr), taps.stderr);
  // An agent in the terminal's group has no group of its own to stop.
  const exit = await waitForExit(child, { group: detached ? child : null });
  forwarding.stop();
  stopGroup();
  return { pid: child.pid, ...exit };
}

/** `run --timeout` on one agent: whether it expired, and its clean-up. */
interface Deadline {
  expired(): boolean;
  clear(): void;
}

/**
 * Stops `child` once `ms` have passed: SIGTERM, then SIGKILL if it is still there
 * TIMEOUT_KILL_GRACE_MS later (the way timeout(1) does with --kill-after) — to its process
 * group when it leads one, so the agent's own children stop with it.
 */
function stopAfter(child: Signallable, ms: number): Deadline {
  let expired = false;
  let kill: ReturnType<typeof setTimeout> | undefined;
  const alive = () => child.exitCode === null && child.signalCode === null;
  const term = setTimeout(() => {
    if (!alive()) return;
    expired = true;
    killGroup(child, "SIGTERM");
    kill = setTimeout(() => alive() && killGroup(child, "SIGKILL"), TIMEOUT_KILL_GRACE_MS);
  }, ms);
  return {
    expired: () => expired,
    clear: () => {
      clearTimeout(term);
      clearTimeout(kill);
    },
  };
}

/** Whether a chunk holds anything but ASCII white space. */
function hasNonSpace(chunk: Uint8Array): boolean {
  for (const b of chunk) if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return true;
  return false;
}

function spawnFailure(
  opts: RunOptions,
  err: Error,
  startedAt: number,
  endedAt: number,
  diagnostics: string[],
): RunResult {
  const { exitCode, message } = commandProblem(opts.command, err, opts.env, opts.cwd);
  const decision = decide({
    cancelled: false,
    exit: null,
    notStarted: {
      error: { code: exitCode, message, category: "crash", anchor: null, source: null },
      retry: retryHint("crash"),
    },
    stopReason: null,
    agentError: null,
    output: 0,
    logCause: null,
    timeout: null,
  });
  const outcome = runOutcome(opts, {
    startedAt,
    endedAt,
    exit: { code: exitCode, signal: null },
    reply: { chars: 0, text: "" },
    diagnostics,
  }, decision);
  return { outcome, exitCode, swallowed: false, stderrWasEmpty: true, readerGone: false };
}

/** A `run` turn's Outcome: one turn of the profile's agent, no session, no publish. */
function runOutcome(
  opts: RunOptions,
  parts: Pick<OutcomeParts, "startedAt" | "endedAt" | "exit" | "reply" | "diagnostics">,
  decision: Decision,
): Outcome {
  return buildOutcome({
    mode: "run",
    agent: opts.profile.name,
    session: null,
    turn: opts.turn ?? 1,
    stopReason: null,
    publish: null,
    ...parts,
  }, decision);
}
