/**
 * `turnguard proxy`: the imperative shell of the transparent ACP stdio proxy. Spawns the
 * agent, passes every byte through in both directions (lines are split, never decoded,
 * unless they can matter), tracks requests and turns, and answers each `session/prompt`
 * with the turn's true outcome: the agent's own response when it is true, a rewritten one
 * when the agent hid a failure, an error when the agent fell silent or died. This file
 * wires the parts together; each is its own module in lib/proxy/.
 */
import { commandProblem } from "../agent/spawn_problem.ts";
import { DEFAULT_INSPECT_LIMIT, LineSplitter } from "../acp/lines.ts";
import { PendingRequests } from "../acp/tracker.ts";
import { SessionCwds } from "../acp/session_cwds.ts";
import { signalExitCode } from "../agent/signals.ts";
import { AgentOwner } from "../agent/owner.ts";
import { type AgentProcess, type ByteSource, byteSource, startAgent } from "./agent_io.ts";
import { AgentLines } from "./agent_lines.ts";
import { ClientLines } from "./client_lines.ts";
import { TurnFinisher } from "./finish.ts";
import { Lifecycle } from "./lifecycle.ts";
import { LiveEvidence } from "./live.ts";
import {
  DEFAULT_GRACE_MS,
  DEFAULT_MAX_PENDING,
  type ProxyOptions,
  type ProxyResult,
} from "./options.ts";
import { LineOutput } from "./output.ts";
import { drain, Guard, pump, SourceHold } from "./relay.ts";
import { type RetryAnswers, RetryQueue } from "./retries.ts";
import { ClientAnswers } from "./answers.ts";
import { SilenceWatch } from "./silence.ts";
import { timerDelay } from "../io/timer_delay.ts";
import { type LineSink, lineSink } from "../io/output.ts";
import type { ProxyState } from "./state.ts";
import { Turns } from "./turns.ts";
import { answerUnstarted } from "./unstarted.ts";

export { DEFAULT_GRACE_MS, DEFAULT_MAX_PENDING } from "./options.ts";
export type { ProxyOptions, ProxyResult } from "./options.ts";

/** Runs the proxy until the agent exits; resolves with turnguard's exit status. */
export async function runProxy(opts: ProxyOptions): Promise<ProxyResult> {
  // The agent's owner listens to signals from before the spawn: one that comes while the
  // agent starts reaches it (and its group) once it runs.
  const signals: string[] = [];
  let onSignal: (signal: string) => void = (signal) => void signals.push(signal);
  const owner = new AgentOwner({
    ownGroup: true,
    graceMs: timerDelay(opts.graceMs ?? DEFAULT_GRACE_MS),
    keepDaemons: opts.keepDaemons,
    signals: opts.forwardSignals !== false,
    onSignal: (signal) => onSignal(signal),
    log: verboseLog(opts),
  });
  try {
    const child = await startAgent(opts, owner);
    if (child instanceof Error) return await spawnFailure(opts, child);
    const proxy = new Proxy(opts, child, owner, signals.length > 0);
    onSignal = () => proxy.signalled();
    return await proxy.run();
  } finally {
    // What the agent left running is stopped: its group and its marked descendants.
    await owner.end();
  }
}

/**
 * Runs the proxy with an agent it did not start: a chain link's successor, reached through
 * the conductor (lib/proxy/chain.ts). Ends when `agent` says it exited.
 */
export async function runWithAgent(
  opts: ProxyOptions,
  agent: AgentProcess,
): Promise<ProxyResult> {
  // No process of its own to stop, but the same signals: SIGTERM finishes the link now.
  let proxy: Proxy | null = null;
  let early = false;
  const owner = new AgentOwner({
    ownGroup: false,
    graceMs: timerDelay(opts.graceMs ?? DEFAULT_GRACE_MS),
    keepDaemons: true,
    signals: opts.forwardSignals !== false,
    onSignal: () => proxy ? proxy.signalled() : (early = true),
    log: verboseLog(opts),
  });
  // Its "agent" is the envelope: a signal passed on to it ends the successor's side, and the
  // open requests are answered as when an agent exits.
  owner.attach(agent);
  try {
    proxy = new Proxy(opts, agent, owner, early);
    return await proxy.run();
  } finally {
    await owner.end();
  }
}

/**
 * `--verbose`: turnguard's own lines on the proxy's stderr, through its sink (redacted,
 * escaped: lib/io/output.ts); undefined without it.
 */
function verboseLog(opts: ProxyOptions): ((line: string) => void) | undefined {
  if (!opts.verbose) return undefined;
  const stderr = lineSink(opts.stderr);
  return (line) => stderr.line(`turnguard: ${line}`);
}

/** The agent did not start: the client's first requests get the reason (proxy/unstarted.ts). */
async function spawnFailure(opts: ProxyOptions, err: unknown): Promise<ProxyResult> {
  const { exitCode, message } = commandProblem(opts.command, err, opts.env, opts.cwd);
  await answerUnstarted({
    input: byteSource(opts.input),
    output: opts.output,
    message: `turnguard: the agent could not be started: ${message}`,
    exitCode,
    waitMs: opts.firstRequestWaitMs,
  });
  return { exitCode, spawnError: message };
}

/** One proxied agent process and its client: the parts, wired. */
class Proxy {
  readonly #state: ProxyState;
  readonly #retries: RetryQueue;
  readonly #silence: SilenceWatch;
  readonly #lifecycle: Lifecycle;
  readonly #clientLines: ClientLines;
  readonly #agentLines: AgentLines;
  readonly #fromClient: LineSplitter;
  readonly #fromAgent: LineSplitter;
  readonly #input: ByteSource;
  readonly #owner: AgentOwner;
  readonly #stderr: LineSink;

  /** `early`: whether a signal came while the agent started. */
  constructor(opts: ProxyOptions, child: AgentProcess, owner: AgentOwner, early: boolean) {
    this.#owner = owner;
    const input = this.#input = byteSource(opts.input);
    const max = opts.maxPending ?? DEFAULT_MAX_PENDING;
    const steps = opts.turnEnd ?? {};
    const clientHold = new SourceHold(input);
    // turnguard's own lines are made safe by the sink; the agent's stderr passes as it is.
    const stderr = this.#stderr = lineSink(opts.stderr);
    const agentHold = new SourceHold(child.stdout);
    const state: ProxyState = this.#state = {
      opts,
      child,
      now: opts.now ?? Date.now,
      log: verboseLog(opts) ?? (() => {}),
      guard: new Guard(stderr),
      toAgent: new LineOutput(
        child.stdin,
        (full) => clientHold.set("agent", full, !state.agentGone),
        (full) => agentHold.set("its own answers", full),
      ),
      toClient: new LineOutput(
        opts.output,
        (full) => agentHold.set("client", full),
        (full) => clientHold.set("its own answers", full, !state.agentGone),
      ),
      turns: new Turns(),
      clientPending: new PendingRequests(max),
      agentPending: new PendingRequests(max),
      sessionCwds: new SessionCwds(),
      keepText: opts.keepReplyText !== false
        ? "reply"
        : opts.classifier.text.length > 0
        ? "notice"
        : "none",
      inFlight: new Set(),
      agentGone: false,
      clientGone: false,
      signalled: early,
    };
    // The retries reach the client's answers, which end turns through the finisher, which
    // holds responses in the retries.
    const toAnswers: RetryAnswers = {
      held: (turn, response) => answers.held(turn, response),
      request: (id, method, sessionId) => answers.request(id, method, sessionId),
    };
    this.#retries = new RetryQueue(state, toAnswers, steps.recorder ?? null, opts.retryWaits);
    const finisher = new TurnFinisher(state, steps, this.#retries);
    const answers = new ClientAnswers(state, finisher);
    finisher.beforeAnswer = (turn, line) => answers.before(turn, line);
    this.#silence = new SilenceWatch(state, answers);
    const live = new LiveEvidence(state, steps.recorder ?? null, answers);
    state.turns.follow = (turn) => live.follow(turn);
    this.#lifecycle = new Lifecycle(state, answers, this.#retries, owner);
    this.#clientLines = new ClientLines(state, steps, this.#retries, answers);
    this.#agentLines = new AgentLines(state, answers);
    const limit = opts.inspectLimit ?? DEFAULT_INSPECT_LIMIT;
    this.#fromClient = new LineSplitter(limit);
    this.#fromAgent = new LineSplitter(limit);
  }

  /** A finish signal came (its owner forwarded it to the agent): the turns are cancelled. */
  signalled(): void {
    this.#state.signalled = true;
  }

  /** Relays until the agent exited and everything it said went out. */
  async run(): Promise<ProxyResult> {
    const state = this.#state;
    const { opts, child, guard } = state;
    const input = this.#input;
    // Resolves once the agent exited and its output ended (or, held open by a grandchild,
    // stayed idle while nothing held it back): all of its bytes have been handed over.
    const exited = child.exited();

    const lifecycle = this.#lifecycle;
    child.stderr.start((chunk) => {
      lifecycle.stderrTail.push(chunk);
      this.#stderr.passThrough(chunk);
    });
    const agentLines = this.#agentLines;
    child.stdout.start((chunk) => {
      agentLines.chunk();
      pump(this.#fromAgent, chunk, state.toClient, agentLines, guard);
    });
    const clientLines = this.#clientLines;
    input.start(
      (chunk) => pump(this.#fromClient, chunk, state.toAgent, clientLines, guard),
      () => void lifecycle.clientClosed(this.#fromClient, clientLines),
    );
    // Its hang-up counts even while its input is paused (the agent does not read it).
    input.watchHangUp?.(() => {
      state.log("the client hung up while its input was paused");
      lifecycle.clientLeft();
    });
    opts.output.on("error", () => {}); // the client stopped reading: keep going
    if (opts.turnTimeoutMs) this.#silence.start(opts.turnTimeoutMs);
    const unlisten = opts.retryWaits ? this.#retries.listen() : () => {};

    const exit = await exited;
    lifecycle.agentExited();
    input.stop();
    this.#silence.stop();

    drain(this.#fromAgent, state.toClient, agentLines, guard);
    this.#retries.stopAll(`the agent exited`);
    unlisten();
    lifecycle.answerOrphans(exit.code, exit.signal);
    while (state.inFlight.size > 0) await Promise.all([...state.inFlight]);
    state.toClient.finish();
    // Told to finish now, turnguard does not wait on a client that does not read.
    await Promise.race([state.toClient.flushed(), this.#owner.finishing]);
    const exitCode = exit.signal !== null ? signalExitCode(exit.signal) : exit.code ?? 1;
    state.log(
      `agent exited with ${exit.signal !== null ? `signal ${exit.signal}` : `status ${exit.code}`}`,
    );
    return { exitCode };
  }
}
