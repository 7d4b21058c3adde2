/**
 * `--turn-timeout`: a turn silent that long (not waiting on the client) is sent a
 * `session/cancel`; after the grace period the client is answered with the turn's timeout,
 * whatever the agent does (lib/proxy/answers.ts answers it).
 */
import { encodeLine } from "../acp/jsonrpc.ts";
import { timerDelay } from "../io/timer_delay.ts";
import type { ClientAnswers } from "./answers.ts";
import { DEFAULT_GRACE_MS } from "./options.ts";
import type { ProxyState } from "./state.ts";
import type { Turn } from "./turns.ts";

/** The grace period of `--grace`, as a timer delay. */
export function graceMs(state: ProxyState): number {
  return timerDelay(state.opts.graceMs ?? DEFAULT_GRACE_MS);
}

/** Watches the running turns for silence. */
export class SilenceWatch {
  readonly #state: ProxyState;
  readonly #answers: ClientAnswers;
  /** Turns being cut short for silence: cancel sent, the grace's timer running. */
  readonly #expiring = new Map<Turn, ReturnType<typeof setTimeout>>();
  #ticker: ReturnType<typeof setInterval> | null = null;

  constructor(state: ProxyState, answers: ClientAnswers) {
    this.#state = state;
    this.#answers = answers;
  }

  /** Starts checking every running turn, a few times per `timeoutMs`. */
  start(timeoutMs: number): void {
    const tick = Math.min(1000, Math.max(20, Math.floor(timeoutMs / 10)));
    this.#ticker = setInterval(() => this.#check(timeoutMs), tick);
  }

  /** The agent is gone: no more checks, no more expiries. */
  stop(): void {
    if (this.#ticker) clearInterval(this.#ticker);
    for (const timer of this.#expiring.values()) clearTimeout(timer);
  }

  #check(timeoutMs: number): void {
    const state = this.#state;
    const now = state.now();
    for (const turn of state.turns.all()) {
      if (this.#expiring.has(turn)) continue;
      // Waiting on the client (a permission prompt) is not the agent's silence.
      if (state.agentPending.countFor(turn.sessionId) > 0) {
        turn.lastActivityAt = now;
        continue;
      }
      const silentMs = now - turn.lastActivityAt;
      if (silentMs < timeoutMs) continue;
      state.log(
        `session ${turn.sessionId} turn ${turn.turn}: silent for ${silentMs} ms; sending session/cancel`,
      );
      const cancel = {
        jsonrpc: "2.0",
        method: "session/cancel",
        params: { sessionId: turn.sessionId },
      };
      state.toAgent.inject(encodeLine(cancel, "\n"));
      this.#answers.cutShort(turn, silentMs);
      const timer = setTimeout(() => {
        this.#expiring.delete(turn);
        // Answered already when the agent answered meanwhile (then as the timeout too).
        this.#answers.silenceOver(turn, state.now());
      }, graceMs(state));
      this.#expiring.set(turn, timer);
    }
  }
}
