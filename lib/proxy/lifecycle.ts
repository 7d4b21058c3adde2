/**
 * The proxy's life around its turns: the client leaving (the agent's input is closed, and
 * after the grace its owner stops it: SIGTERM, then SIGKILL if it lingers), and the agent's
 * exit (every request the client still waits on is answered: lib/proxy/answers.ts).
 */
import type { LineSplitter } from "../acp/lines.ts";
import { STDERR_TAIL_BYTES } from "../agent/launch.ts";
import type { AgentOwner } from "../agent/owner.ts";
import type { Stopping } from "../agent/stop.ts";
import { Tail } from "../text/byte_window.ts";
import { lastLines } from "../text/text.ts";
import type { ClientAnswers } from "./answers.ts";
import { drain, type LineReader } from "./relay.ts";
import type { RetryQueue } from "./retries.ts";
import { graceMs } from "./silence.ts";
import type { ProxyState } from "./state.ts";

/** The ends of one proxy's life. */
export class Lifecycle {
  readonly #state: ProxyState;
  readonly #answers: ClientAnswers;
  readonly #retries: RetryQueue;
  readonly #owner: AgentOwner;
  /** The agent's last stderr bytes, for the message of its death. */
  readonly stderrTail = new Tail(STDERR_TAIL_BYTES);
  #eofTimer: ReturnType<typeof setTimeout> | undefined;
  #stopping: Stopping | null = null;
  #left = false;

  constructor(state: ProxyState, answers: ClientAnswers, retries: RetryQueue, owner: AgentOwner) {
    this.#state = state;
    this.#answers = answers;
    this.#retries = retries;
    this.#owner = owner;
  }

  /**
   * The client left (its input ended, or hung up while reading it was paused): after the
   * grace, the agent is stopped (SIGTERM, then SIGKILL a grace later), whatever it does
   * meanwhile. Counted once, from the first sign.
   */
  clientLeft(): void {
    const state = this.#state;
    if (this.#left || state.agentGone) return;
    this.#left = true;
    const child = state.child;
    this.#eofTimer = setTimeout(() => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      state.log("the agent ignored EOF; sending SIGTERM");
      this.#stopping = this.#owner.stop({ graceMs: graceMs(state) });
    }, graceMs(state));
  }

  /**
   * The client closed stdin (`fromClient` and `reader`: what is left of its input): close
   * the agent's, then TERM and KILL it if it lingers.
   */
  async clientClosed(fromClient: LineSplitter, reader: LineReader): Promise<void> {
    const state = this.#state;
    // An `error` may be followed by `end`: the input closes once.
    if (state.agentGone || state.clientGone) return;
    drain(fromClient, state.toAgent, reader, state.guard);
    state.clientGone = true;
    this.#retries.stopAll("the client closed its input");
    // The grace counts from the client's close, not from when the agent took the last of
    // its input: an agent that never reads its stdin (while it floods stdout) is stopped.
    this.clientLeft();
    await state.toAgent.end();
    state.log("the client closed its input; closed the agent's");
  }

  /** The agent exited: no more EOF timers. */
  agentExited(): void {
    this.#state.agentGone = true;
    clearTimeout(this.#eofTimer);
    this.#stopping?.cancel();
  }

  /** The agent is gone: every request the client still waits on gets its answer. */
  answerOrphans(code: number | null, signal: string | null): void {
    const tail = lastLines(this.stderrTail.text(), 3);
    this.#answers.exited(code, signal, tail, this.#state.now());
  }
}
