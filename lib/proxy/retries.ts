/**
 * Retries in the proxy: a failed turn's response is held while its retry waits; when the
 * wait is over (or `turnguard retry` asks), the prompt goes to the agent again while the
 * client keeps waiting. A retry that will not run answers the client with the failed
 * attempt's response and is journaled as stopped.
 */
import { errorText } from "../errors.ts";
import { idKey, type JsonRpcId } from "../acp/jsonrpc.ts";
import { joinBytes } from "../acp/lines.ts";
import type { ScheduledRetry } from "../retry/policy.ts";
import type { TurnRecorder } from "../retry/turn_recorder.ts";
import { RetryWaits } from "../retry/waits.ts";
import { formatDuration } from "../text/text.ts";
import { goneReason, type ProxyState } from "./state.ts";
import { restartTurn } from "./tracking.ts";
import type { RetryHold } from "./turn_end.ts";
import type { Turn } from "./turns.ts";

/** A failed turn whose retry waits: the client's request stays unanswered meanwhile. */
interface WaitingRetry {
  turn: Turn;
  decision: ScheduledRetry;
  /** The failed attempt's response, sent to the client if the retry never runs. */
  response: Uint8Array | null;
}

const NEWLINE = new Uint8Array([0x0a]);

/** A turn's key among waiting retries: session and turn number. */
const retryKey = (turn: Turn) => `${turn.sessionId}\n${turn.turn}`;

/**
 * How the retries reach the client's answers (lib/proxy/answers.ts): a held response goes
 * out, a retried prompt waits for its answer again.
 */
export interface RetryAnswers {
  held(turn: Turn, response: Uint8Array): void;
  request(id: JsonRpcId, method: string, sessionId: string | null): unknown;
}

/** The retries one proxy holds: where failed turns' responses wait (a RetryHold). */
export class RetryQueue implements RetryHold {
  readonly #state: ProxyState;
  readonly #recorder: TurnRecorder | null;
  readonly #answers: RetryAnswers;
  readonly #waits: RetryWaits;
  readonly #waiting = new Map<string, WaitingRetry>();

  constructor(
    state: ProxyState,
    answers: RetryAnswers,
    recorder: TurnRecorder | null,
    waits?: RetryWaits,
  ) {
    this.#state = state;
    this.#answers = answers;
    this.#recorder = recorder;
    this.#waits = waits ?? new RetryWaits();
  }

  /** Makes SIGUSR1 (`turnguard retry`) run the waiting retries now, until the returned stop. */
  listen(): () => void {
    return this.#waits.listen();
  }

  /** Holds the failed attempt's response while its retry waits; null, or why it cannot. */
  hold(
    turn: Turn,
    decision: ScheduledRetry,
    response: Uint8Array | null,
    sent: boolean,
  ): string | null {
    const gone = goneReason(this.#state);
    if (gone !== null) return gone;
    if (sent) return "the agent's response already went to the client";
    if (turn.promptLine === null) {
      return `its prompt was not kept: the ${this.#state.turns.promptLimit}-byte budget of ` +
        `prompt copies was used up`;
    }
    const waiting: WaitingRetry = { turn, decision, response: response ? response.slice() : null };
    const key = retryKey(turn);
    this.#waiting.set(key, waiting);
    this.#state.log(
      `session ${turn.sessionId} turn ${turn.turn}: retry ${decision.attempt} of ${decision.of} ` +
        `waits out ${decision.reason}; it runs in ${formatDuration(decision.afterMs)}`,
    );
    this.#waits.schedule(key, decision.afterMs, (how) => {
      if (this.#waiting.get(key) !== waiting) return;
      if (how === "stopped") this.#stop(waiting, "stopped");
      else this.#run(waiting);
    });
    return null;
  }

  /** Stops the waiting retries of one session (the client cancelled or prompted again). */
  stopSession(sessionId: string, why: string): void {
    for (const waiting of [...this.#waiting.values()]) {
      if (waiting.turn.sessionId === sessionId) this.#stop(waiting, why);
    }
  }

  /** Stops every waiting retry (the agent or the client is gone). */
  stopAll(why: string): void {
    for (const waiting of [...this.#waiting.values()]) this.#stop(waiting, why);
  }

  /** The retry's time came (or `turnguard retry` asked): the prompt goes to the agent again. */
  #run(waiting: WaitingRetry): void {
    const { turn: failed, decision } = waiting;
    this.#waiting.delete(retryKey(failed));
    const gone = goneReason(this.#state);
    if (gone !== null) return this.#answerStopped(waiting, gone);
    const state = this.#state;
    try {
      this.#recorder?.retryStarted(
        { session: failed.sessionId, turn: failed.turn },
        decision.attempt,
      );
    } catch (err) {
      state.log(`recording the retry's start failed: ${errorText(err)}`);
    }
    const turn = restartTurn(state, failed, decision.attempt, state.now());
    this.#answers.request(turn.requestId, "session/prompt", turn.sessionId);
    const prompt = turn.promptLine!; // hold() took only turns with their prompt kept
    state.toAgent.inject(
      prompt.at(-1) === 0x0a ? prompt : joinBytes([prompt, NEWLINE], prompt.length + 1),
    );
    state.log(
      `session ${turn.sessionId} turn ${turn.turn}: retry ${decision.attempt} of ${decision.of} ` +
        `sent the prompt again (request ${idKey(turn.requestId)})`,
    );
  }

  /** A waiting retry will not run: says why, and answers the client with the failed attempt. */
  #stop(waiting: WaitingRetry, why: string): void {
    const key = retryKey(waiting.turn);
    if (this.#waiting.get(key) !== waiting) return;
    this.#waiting.delete(key);
    this.#waits.stop(key);
    this.#answerStopped(waiting, why);
  }

  #answerStopped(waiting: WaitingRetry, why: string): void {
    const { decision, turn } = waiting;
    this.#state.turns.releasePrompt(turn);
    const reason = `retry ${decision.attempt} of ${decision.of} was stopped before it ran (${why})`;
    this.#state.log(`session ${turn.sessionId} turn ${turn.turn}: ${reason}`);
    try {
      this.#recorder?.stopped({ session: turn.sessionId, turn: turn.turn }, turn.attempt, reason);
    } catch (err) {
      this.#state.log(`recording the stopped retry failed: ${errorText(err)}`);
    }
    if (waiting.response) this.#answers.held(turn, waiting.response);
  }
}
