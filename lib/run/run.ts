/**
 * `turnguard run`: the print-mode wrapper. Snapshots the agent's logs, runs it with its
 * streams passed through byte for byte, forwards signals, then scans, decides and emits.
 */
import type { Readable, Writable } from "node:stream";
import { classify, timeoutCause } from "../cause/classify.ts";
import { type Cause, decide, type Decision, type TurnFacts } from "../core/decide.ts";
import { buildCause } from "../core/cause.ts";
import { buildOutcome, type OutcomeParts } from "../core/build_outcome.ts";
import { EXIT } from "../errors.ts";
import { commandProblem } from "../agent/spawn_problem.ts";
import {
  emptyTurnNote,
  findLogCause,
  readTurnLogs,
  snapshotProfileLogs,
} from "../cause/log_cause.ts";
import { readNotices } from "../cause/notices.ts";
import { ReadBudget } from "../io/bounded_read.ts";
import type { LogFs } from "../io/logfs.ts";
import type { AgentAttempt, Outcome } from "../core/outcome.ts";
import { earlyCause, type EndEarly, endEarly } from "../core/end_early.ts";
import { AttemptFollower } from "../cause/attempt_follower.ts";
import { attemptsNote, attemptsSummary, keepAttempt } from "../cause/agent_attempts.ts";
import type { Classifier } from "../cause/classifier.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import { ownGroup, signalExitCode, type Signallable } from "../agent/signals.ts";
import { AgentOwner } from "../agent/owner.ts";
import { type AgentLaunch, REPLY_TEXT_BYTES, STDERR_TAIL_BYTES } from "../agent/launch.ts";
import { waitForExit } from "../agent/node_child.ts";
import type { Stopping } from "../agent/stop.ts";
import { capUtf8, formatDuration, lastLines } from "../text/text.ts";
import { Head, Tail } from "../text/byte_window.ts";
import { bun } from "../io/bun_api.ts";
import { type AgentExit, bunPassThrough, type PassThroughTaps } from "./bun_pass_through.ts";
import { timerDelay } from "../io/timer_delay.ts";
import { StdStream } from "../io/stdio.ts";

/**
 * Bytes of stdout kept for `reply.text` when `--outcome-json` holds stdout back: memory
 * stays bounded whatever the agent writes; a longer reply is cut and `reply.capped` says so.
 */
export const REPLY_CAPTURE_BYTES = 4 * 1024 * 1024;

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
  /** Hear SIGINT/SIGTERM/SIGHUP/SIGQUIT and forward them to the agent (default true). */
  signals?: boolean;
  /**
   * `--fail-fast`: when the agent's logs show it retrying a cause retrying cannot cure
   * (lib/core/end_early.ts), it is stopped (SIGTERM, then SIGKILL) and the turn fails with
   * that cause.
   */
  failFast?: boolean;
  /** Told of each failed attempt of the agent's the logs show while it runs (the journal). */
  onAttempt?: (attempt: AgentAttempt) => void;
  /** How often the logs are looked at while the agent runs (ms; default 1000). */
  followPollMs?: number;
}

/**
 * After a SIGTERM from `--timeout` or forwarded from turnguard's own, how long the agent
 * has to exit before SIGKILL.
 */
export const KILL_GRACE_MS = 5000;

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
  return buildCause({ code, message, category, retry });
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

  const detached = ownGroup();
  const owner = new AgentOwner({
    ownGroup: detached,
    graceMs: KILL_GRACE_MS,
    keepDaemons: opts.keepDaemons,
    signals: opts.signals !== false,
    onSignal: () => {
      cancelled = true;
    },
  });
  // The agent's own attempts, read from its logs while it runs (a run has no session, so
  // no session records to follow).
  const attempts: AgentAttempt[] = [];
  let early: EndEarly | null = null;
  let earlyStop: Stopping | null = null;
  let agentPid: number | null = null;
  const follower = new AttemptFollower({
    logs: snapshot,
    logFormat: opts.profile.logFormat,
    records: null,
    startedAt,
    classifier: opts.classifier,
    readers: [],
    pid: () => agentPid,
    pollMs: opts.followPollMs,
    fs: opts.fs,
    now,
    onAttempt: (attempt) => {
      keepAttempt(attempts, attempt);
      opts.onAttempt?.(attempt);
      if (early) return;
      early = endEarly(attempts, opts.failFast === true);
      // The owner's one staged stop: SIGTERM, then SIGKILL after the grace.
      if (early) earlyStop = owner.stop();
    },
  });
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
    spawned: (child: Signallable & { pid?: number }) => {
      if (opts.timeoutMs) deadline = stopAfter(child, owner, opts.timeoutMs);
      agentPid = child.pid ?? null;
      follower.start();
    },
  };
  let exit: AgentExit;
  try {
    exit = bun && opts.stdout instanceof StdStream && opts.stderr instanceof StdStream
      ? await bunPassThrough(
        opts,
        owner,
        detached,
        opts.captureStdout ? null : opts.stdout,
        opts.stderr,
        taps,
      )
      : await nodePassThrough(opts, owner, detached, taps);
  } finally {
    follower.stop();
    (earlyStop as Stopping | null)?.cancel();
    deadline?.clear();
    // What the agent left running is stopped: its group and its marked descendants.
    await owner.end();
  }
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
  // The agent's own notices in its output (lib/cause/notices.ts), when all of it was kept.
  const notices = kept.truncated
    ? null
    : readNotices(kept.text(), opts.classifier, endedAt, diagnostics);
  // What the agent was doing when --timeout stopped it, as its logs showed.
  const doing = attemptsSummary(attempts) ? `; ${attemptsSummary(attempts)}` : "";
  const facts: TurnFacts = {
    notices: notices?.facts ?? null,
    cancelled,
    exit: { code: exit.code, signal: exit.signal },
    stopReason: null,
    agentError,
    output: outBytes,
    outputBlank: !meaningful,
    logCause: log.cause,
    timeout: deadline?.expired()
      ? timeoutCause(
        `turn timed out: stopped after ${formatDuration(opts.timeoutMs!)} (--timeout)${doing}`,
      )
      : null,
    endedEarly: early ? earlyCause(early) : null,
  };
  const decision = decide(facts);
  if (decision.status === "empty" && exit.code === 0) {
    diagnostics.push(emptyTurnNote({
      profile: opts.profile.name,
      patterns: snapshot.patterns,
      scan,
      stderrBytes: new TextEncoder().encode(stderrTail.text()).length,
    }));
  }
  if (opts.captureStdout && kept.truncated) {
    diagnostics.push(
      `stdout was ${outBytes} bytes; reply.text keeps its first ${REPLY_CAPTURE_BYTES} (reply.capped)`,
    );
  }
  const outcome = runOutcome(opts, {
    startedAt,
    endedAt,
    exit: { code: exit.code, signal: exit.signal },
    reply: notices && notices.text !== kept.text()
      ? { chars: notices.text.length, text: notices.text }
      : { chars, text: kept.text(), ...(kept.truncated ? { capped: true } : {}) },
    diagnostics,
  }, decision);
  if (attempts.length > 0) outcome.agentAttempts = attempts;
  const left = attemptsNote(attempts);
  if (left) outcome.diagnostics.push(left);
  if (early) outcome.endedEarly = { reason: (early as EndEarly).reason };
  let exitCode = 0;
  if (deadline?.expired()) exitCode = EXIT.timeout;
  else if (early) exitCode = EXIT.failed;
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
async function nodePassThrough(
  opts: RunOptions,
  owner: AgentOwner,
  detached: boolean,
  taps: PassThroughTaps,
): Promise<AgentExit> {
  const writable = (s: Writable | StdStream) => s instanceof StdStream ? s.writable() : s;
  // Loaded here: under Bun, a run never needs node:child_process.
  const { spawn } = process.getBuiltinModule("node:child_process");
  const child = spawn(opts.command, opts.args, {
    stdio: ["inherit", "pipe", "pipe"],
    env: owner.env(opts.env) as NodeJS.ProcessEnv,
    cwd: opts.cwd,
    detached,
  });
  if (child.pid !== undefined) {
    owner.attach(child);
    taps.spawned?.(child);
  }
  if (opts.captureStdout) child.stdout!.on("data", taps.stdout);
  else pipeThrough(child.stdout!, writable(opts.stdout), taps.stdout, taps.readerGone);
  pipeThrough(child.stderr!, writable(opts.stderr), taps.stderr);
  const exit = await waitForExit(child, owner);
  return { pid: child.pid, ...exit };
}

/** `run --timeout` on one agent: whether it expired, and its clean-up. */
interface Deadline {
  expired(): boolean;
  clear(): void;
}

/**
 * Stops the agent once `ms` have passed, through its owner: SIGTERM, then SIGKILL if it
 * is still there KILL_GRACE_MS later (the way timeout(1) does with --kill-after), to its
 * process group when it leads one.
 */
function stopAfter(child: Signallable, owner: AgentOwner, ms: number): Deadline {
  let expired = false;
  let stopping: Stopping | null = null;
  const term = setTimeout(() => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    expired = true;
    stopping = owner.stop();
  }, timerDelay(ms));
  return {
    expired: () => expired,
    clear: () => {
      clearTimeout(term);
      stopping?.cancel();
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
    notStarted: buildCause({ code: exitCode, message, category: "crash" }),
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
