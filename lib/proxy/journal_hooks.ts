/**
 * Proxy turns in the journal: turn hooks for lib/proxy/proxy.ts built on the TurnRecorder. The proxy
 * calls `turnEnded` before the client's response is forwarded, so the retry decision and
 * the turn's end are in the journal before the client sees the failure.
 *
 * A recorder that may retry schedules (and journals) retries; something must run them.
 * So `journalHooks` takes a recorder whose type says `retries: 0`, or a RetryExecutor:
 * no retry is ever journaled that nobody runs.
 */
import { streamed, type Turn } from "./turns.ts";
import type { TurnHooks } from "./hooks.ts";
import type { RetryPolicy, ScheduledRetry } from "../retry/policy.ts";
import type { TurnRecorder } from "../retry/turn_recorder.ts";

/**
 * Whether a turn already reached the client: anything streamed (text, thoughts, tools), or
 * a request the agent sent it (a permission prompt).
 */
export function reachedClient(turn: Turn): boolean {
  return streamed(turn) > 0 || turn.requests > 0;
}

/** A recorder that never retries: its policy's type says `retries: 0`. */
export type NoRetryRecorder = TurnRecorder<RetryPolicy & { readonly retries: 0 }>;

/** How a retry that the executor runs tells the journal where it is. */
export interface RetryRun {
  /** The retry begins: call it just before the prompt is sent to the agent again. */
  begin(): void;
  /** The retry will not run (the client cancelled, the agent is gone): says why. */
  stop(reason: string): void;
}

/**
 * Runs the retries a proxy's recorder schedules: after `decision.afterMs` (or at once, on
 * `turnguard retry`), it sends the turn's `promptLine` to the agent again while the client
 * keeps waiting. The retry is the same turn (same session and number), so its next
 * `turnEnded` is journaled as attempt `decision.attempt`.
 */
export interface RetryExecutor {
  retry(turn: Turn, decision: ScheduledRetry, run: RetryRun): void;
}

/** Hooks that journal each proxy turn: its start, its decision and its end. */
export function journalHooks(recorder: NoRetryRecorder, agent: string): TurnHooks;
/** Hooks that journal each proxy turn and hand the retries they schedule to `retries`. */
export function journalHooks(
  recorder: TurnRecorder,
  agent: string,
  retries: RetryExecutor,
): TurnHooks;
export function journalHooks(
  recorder: TurnRecorder,
  agent: string,
  retries?: RetryExecutor,
): TurnHooks {
  if (retries === undefined && recorder.policy.retries > 0) {
    throw new Error(
      `journalHooks: a recorder with ${recorder.policy.retries} retries needs a RetryExecutor`,
    );
  }
  const key = (turn: Turn) => ({ session: turn.sessionId, turn: turn.turn });
  const id = (turn: Turn) => `${turn.sessionId}\n${turn.turn}`;
  /** The attempt that runs, for turns being retried. */
  const attempts = new Map<string, number>();
  return {
    turnStarted(turn) {
      recorder.started(key(turn), { mode: "proxy", agent, promptId: turn.requestId });
    },
    turnEnded(outcome, turn) {
      const attempt = attempts.get(id(turn)) ?? 0;
      const decision = recorder.ended(key(turn), attempt, outcome, reachedClient(turn));
      if (decision.kind !== "retry" || retries === undefined) {
        attempts.delete(id(turn));
        return;
      }
      retries.retry(turn, decision, {
        begin() {
          attempts.set(id(turn), decision.attempt);
          recorder.retryStarted(key(turn), decision.attempt);
        },
        stop(reason) {
          attempts.delete(id(turn));
          recorder.stopped(key(turn), attempt, reason);
        },
      });
    },
  };
}
