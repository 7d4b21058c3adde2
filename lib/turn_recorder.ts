/**
 * The turn recorder: what `turnguard run` and `turnguard proxy` tell the journal about a
 * turn, in the order readers rely on. When an attempt ends, the retry decision is written
 * first and the attempt's end after it, so a reader that sees a failed end always sees its
 * decision too.
 */
import type { JournalRecord, SettledWhy } from "./journal.ts";
import type { Outcome } from "./outcome.ts";
import { decideRetry, type RetryDecision, type RetryPolicy } from "./retry_policy.ts";

/** Where records go (the journal writer; tests pass an array). */
export interface JournalSink {
  append(record: JournalRecord): void;
}

/** A turn: which session, which number. */
export interface TurnKey {
  session: string;
  turn: number;
}

/** How a recorder is wired. */
export interface RecorderOptions {
  /** Null: nothing is journaled (retries still work). */
  journal: JournalSink | null;
  name: string;
  policy: RetryPolicy;
  pid?: number;
  now?: () => number;
  random?: () => number;
  /** Told once when the journal cannot be written; the turn goes on. */
  onJournalError?: (message: string) => void;
}

/** Records turns and decides their retries. */
export class TurnRecorder {
  readonly name: string;
  readonly policy: RetryPolicy;
  readonly #journal: JournalSink | null;
  readonly #pid: number;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #onError: (message: string) => void;
  #failed = false;

  constructor(opts: RecorderOptions) {
    this.name = opts.name;
    this.policy = opts.policy;
    this.#journal = opts.journal;
    this.#pid = opts.pid ?? process.pid;
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
    this.#onError = opts.onJournalError ?? (() => {});
  }

  #common(key: TurnKey) {
    return {
      ts: new Date(this.#now()).toISOString(),
      name: this.name,
      session: key.session,
      turn: key.turn,
      pid: this.#pid,
    };
  }

  #write(record: JournalRecord): void {
    if (!this.#journal) return;
    try {
      this.#journal.append(record);
    } catch (err) {
      if (this.#failed) return;
      this.#failed = true;
      this.#onError(`journal: cannot write (${(err as Error).message}); turns are not journaled`);
    }
  }

  /** A turn began. */
  started(
    key: TurnKey,
    info: { mode: "run" | "proxy"; agent: string; promptId: string | number | null },
  ): void {
    this.#write({ ...this.#common(key), event: "turn_started", ...info });
  }

  /**
   * An attempt ended (0: the first try, k: the k-th retry). Decides its retry, journals the
   * decision, then the end, and returns the decision for the caller to carry out.
   */
  ended(key: TurnKey, attempt: number, outcome: Outcome, sideEffects: boolean): RetryDecision {
    const decision = decideRetry({ outcome, sideEffects, attempt }, this.policy, this.#random);
    const common = this.#common(key);
    if (decision.kind === "retry") {
      const nextAt = new Date(this.#now() + decision.afterMs).toISOString();
      this.#write({
        ...common,
        event: "retry_scheduled",
        attempt: decision.attempt,
        of: decision.of,
        afterMs: decision.afterMs,
        nextAt,
        reason: decision.reason,
      });
    } else if (decision.kind === "settled") {
      this.#settle(key, attempt, decision.why, decision.reason);
    }
    this.#write({ ...common, event: "turn_ended", attempt, outcome });
    return decision;
  }

  /** Retry `attempt` begins to run. */
  retryStarted(key: TurnKey, attempt: number): void {
    this.#write({ ...this.#common(key), event: "retry_started", attempt, of: this.policy.retries });
  }

  /** A waiting retry was stopped before it ran; `attempt` is the failed one before it. */
  stopped(key: TurnKey, attempt: number, reason: string): void {
    this.#settle(key, attempt, "stopped", reason);
  }

  #settle(key: TurnKey, attempt: number, why: SettledWhy, reason: string): void {
    this.#write({
      ...this.#common(key),
      event: "retry_settled",
      attempt,
      of: this.policy.retries,
      why,
      reason,
    });
  }
}
