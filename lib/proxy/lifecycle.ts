/**
 * The proxy's life around its turns: the client closing its input (the agent's is closed,
 * then it is sent SIGTERM and SIGKILL if it lingers), and the agent's exit (every request
 * the client still waits on is answered with an error; a turn's is its turn's end).
 */
import { encodeResponse } from "../acp/jsonrpc.ts";
import type { LineSplitter } from "../acp/lines.ts";
import { killGroup } from "../agent/signals.ts";
import { Tail } from "../text/byte_window.ts";
import { lastLines } from "../text/text.ts";
import { STDERR_TAIL_BYTES } from "../run/run.ts";
import { exitMessage, type TurnEnd } from "./conclude.ts";
import type { TurnFinisher } from "./finish.ts";
import { drain, type LineReader } from "./relay.ts";
import type { RetryQueue } from "./retries.ts";
import { crashData, errorResponse } from "./rewrite.ts";
import { graceMs } from "./silence.ts";
import { injectReply, type ProxyState } from "./state.ts";

/** The ends of one proxy's life. */
export class Lifecycle {
  readonly #state: ProxyState;
  readonly #finisher: TurnFinisher;
  readonly #retries: RetryQueue;
  /** The agent's last stderr bytes, for the message of its death. */
  readonly stderrTail = new Tail(STDERR_TAIL_BYTES);
  #eofTimers: ReturnType<typeof setTimeout>[] = [];

  constructor(state: ProxyState, finisher: TurnFinisher, retries: RetryQueue) {
    this.#state = state;
    this.#finisher = finisher;
    this.#retries = retries;
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
    const child = state.child;
    const alive = () => child.exitCode === null && child.signalCode === null;
    this.#eofTimers.push(setTimeout(() => {
      if (!alive()) return;
      state.log("the agent ignored EOF; sending SIGTERM");
      killGroup(child, "SIGTERM");
      this.#eofTimers.push(setTimeout(() => {
        if (!alive()) return;
        state.log("the agent ignored SIGTERM; sending SIGKILL");
        killGroup(child, "SIGKILL");
      }, graceMs(state)));
    }, graceMs(state)));
    await state.toAgent.end();
    state.log("the client closed its input; closed the agent's");
  }

  /** The agent exited: no more EOF timers. */
  agentExited(): void {
    this.#state.agentGone = true;
    for (const t of this.#eofTimers) clearTimeout(t);
  }

  /** The agent is gone: every request the client still waits on gets an error. */
  answerOrphans(code: number | null, signal: string | null): void {
    const state = this.#state;
    const tail = lastLines(this.stderrTail.text(), 3);
    const message = exitMessage(code, signal, tail);
    const now = state.now();
    for (const request of state.clientPending.all()) {
      state.clientPending.take(request.id);
      if (request.answered) continue;
      const crash = encodeResponse(
        errorResponse(request.id, message, crashData(message, code)),
        request.idLexeme,
        "\n",
      );
      const turn = state.turns.forRequest(request.id);
      if (!turn) {
        state.toClient.inject(crash);
        continue;
      }
      state.turns.end(turn);
      if (state.signalled) turn.cancelled = true;
      // Whether a client that hung up gave up on the turn is decide's (`givenUp`).
      const end: TurnEnd = {
        kind: "exit",
        code,
        signal,
        stderrTail: tail,
        clientGone: state.clientGone,
      };
      injectReply(state, this.#finisher.finish(turn, end, null, now, crash));
    }
  }
}
