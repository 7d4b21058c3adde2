/**
 * `--turn-timeout`: a turn silent that long (not waiting on the client) is sent a
 * `session/cancel`; after the grace period the client is answered with an error, whatever
 * the agent does.
 */
import { encodeLine, encodeResponse } from "../acp/jsonrpc.ts";
import { timerDelay } from "../io/timer_delay.ts";
import { attemptsSummary } from "../cause/agent_attempts.ts";
import { formatDuration } from "../text/text.ts";
import type { TurnEnd } from "./conclude.ts";
import type { TurnFinisher } from "./finish.ts";
import { DEFAULT_GRACE_MS } from "./options.ts";
import { crashData, errorResponse } from "./rewrite.ts";
import { injectReply, type ProxyState } from "./state.ts";
import type { Turn } from "./turns.ts";

/** A turn being cut short for silence: cancel sent, waiting for the grace period. */
interface Expiry {
  timer: ReturnType<typeof setTimeout>;
  /** How long the turn had been silent when it was cancelled. */
  silentMs: number;
}

/** The grace period of `--grace`, as a timer delay. */
export function graceMs(state: ProxyState): number {
  return timerDelay(state.opts.graceMs ?? DEFAULT_GRACE_MS);
}

/** Watches the running turns for silence. */
export class SilenceWatch {
  readonly #state: ProxyState;
  readonly #finisher: TurnFinisher;
  readonly #expiring = new Map<Turn, Expiry>();
  #ticker: ReturnType<typeof setInterval> | null = null;

  constructor(state: ProxyState, finisher: TurnFinisher) {
    this.#state = state;
    this.#finisher = finisher;
  }

  /** Starts checking every running turn, a few times per `timeoutMs`. */
  start(timeoutMs: number): void {
    const tick = Math.min(1000, Math.max(20, Math.floor(timeoutMs / 10)));
    this.#ticker = setInterval(() => this.#check(timeoutMs), tick);
  }

  /**
   * The turn ended on its own: when it was being cut short, its cancel's grace is over
   * and it ends as the timeout (the silence it was cancelled after); else null.
   */
  settle(turn: Turn): TurnEnd | null {
    const expiry = this.#expiring.get(turn);
    if (!expiry) return null;
    clearTimeout(expiry.timer);
    this.#expiring.delete(turn);
    return { kind: "timeout", silentMs: expiry.silentMs };
  }

  /** The agent is gone: no more checks, no more expiries. */
  stop(): void {
    if (this.#ticker) clearInterval(this.#ticker);
    for (const { timer } of this.#expiring.values()) clearTimeout(timer);
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
      const doing = attemptsSummary(turn.agentAttempts);
      state.log(
        `session ${turn.sessionId} turn ${turn.turn}: silent for ${silentMs} ms${
          doing ? ` (${doing})` : ""
        }; sending session/cancel`,
      );
      const cancel = {
        jsonrpc: "2.0",
        method: "session/cancel",
        params: { sessionId: turn.sessionId },
      };
      state.toAgent.inject(encodeLine(cancel, "\n"));
      const timer = setTimeout(() => this.#expire(turn, silentMs), graceMs(state));
      this.#expiring.set(turn, { timer, silentMs });
    }
  }

  /** The grace after a timeout's cancel is over: answer the client now. */
  #expire(turn: Turn, silentMs: number): void {
    const state = this.#state;
    this.#expiring.delete(turn);
    if (state.turns.forRequest(turn.requestId) !== turn) return;
    state.turns.end(turn);
    const request = state.clientPending.get(turn.requestId);
    if (request) request.answered = true;
    const doing = attemptsSummary(turn.agentAttempts);
    const message = `the agent was silent for ${formatDuration(silentMs)}${
      doing ? `; ${doing}` : ""
    }`;
    const fallback = encodeResponse(
      errorResponse(turn.requestId, message, crashData(message, null)),
      turn.requestIdLexeme,
      "\n",
    );
    const end: TurnEnd = { kind: "timeout", silentMs };
    injectReply(state, this.#finisher.finish(turn, end, null, state.now(), fallback));
  }
}
