/**
 * Live evidence in the proxy: each running turn's logs and session records are followed
 * (lib/cause/attempt_follower.ts) and every failed attempt of the agent they show is kept on
 * the turn, journaled (`agent_attempt`) and, with `--fail-fast`, weighed by the pure
 * `endEarly` (lib/core/end_early.ts). A turn it ends is sent `session/cancel`, and the client
 * is answered with the attempt's true error at once (`ClientAnswers.answerNow`, the one place
 * that answers the client: the agent's late answer to the prompt is swallowed, so each
 * prompt gets exactly one answer).
 */
import { errorText } from "../errors.ts";
import { encodeLine } from "../acp/jsonrpc.ts";
import { AttemptFollower } from "../cause/attempt_follower.ts";
import { keepAttempt } from "../cause/agent_attempts.ts";
import { type EndEarly, endEarly } from "../core/end_early.ts";
import type { AgentAttempt } from "../core/outcome.ts";
import type { TurnRecorder } from "../retry/turn_recorder.ts";
import type { ClientAnswers } from "./answers.ts";
import type { ProxyState } from "./state.ts";
import type { Turn } from "./turns.ts";

/** Follows the proxy's running turns and ends those `--fail-fast` says to end. */
export class LiveEvidence {
  constructor(
    readonly state: ProxyState,
    readonly recorder: TurnRecorder | null,
    readonly answers: ClientAnswers,
  ) {}

  /** Starts following a turn that just started; returns what stops it. */
  follow(turn: Turn): () => void {
    const { opts, child } = this.state;
    const follower = new AttemptFollower({
      logs: turn.snapshot,
      logFormat: opts.profile.logFormat,
      records: turn.records,
      startedAt: turn.startedAt,
      classifier: opts.classifier,
      readers: opts.readers ?? [],
      pid: () => child.pid ?? null,
      onAttempt: (attempt) => this.#attempt(turn, attempt),
      onDiagnostic: (line) =>
        this.state.log(`session ${turn.sessionId} turn ${turn.turn}: following: ${line}`),
      pollMs: opts.followPollMs,
      fs: opts.fs,
      now: this.state.now,
    });
    if (!follower.following) return () => {};
    follower.start();
    return () => follower.stop();
  }

  #attempt(turn: Turn, attempt: AgentAttempt): void {
    const state = this.state;
    // A turn already ended (answered, cut short) takes no more attempts.
    if (state.turns.forRequest(turn.requestId) !== turn) return;
    keepAttempt(turn.agentAttempts, attempt);
    state.log(
      `session ${turn.sessionId} turn ${turn.turn}: the agent's attempt ${attempt.n} failed ` +
        `(${attempt.category}, ${
          attempt.retryable ? "retryable" : "not retryable"
        }): ${attempt.cause}`,
    );
    try {
      this.recorder?.agentAttempt({ session: turn.sessionId, turn: turn.turn }, attempt);
    } catch (err) {
      state.log(`recording the agent's attempt failed: ${errorText(err)}`);
    }
    const early = endEarly(turn.agentAttempts, state.opts.failFast === true);
    if (early) this.#endEarly(turn, early);
  }

  /**
   * Cancels the turn at the agent and answers the client with the attempt's error now
   * (lib/proxy/answers.ts: the agent's later answer to the prompt is swallowed).
   */
  #endEarly(turn: Turn, early: EndEarly): void {
    const state = this.state;
    state.log(
      `session ${turn.sessionId} turn ${turn.turn}: ${early.reason}; sending session/cancel`,
    );
    if (!this.answers.answerNow(turn, { kind: "early", early }, state.now())) return;
    const cancel = {
      jsonrpc: "2.0",
      method: "session/cancel",
      params: { sessionId: turn.sessionId },
    };
    state.toAgent.inject(encodeLine(cancel, "\n"));
  }
}
