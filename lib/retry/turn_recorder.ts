/**
 * The turn recorder: what `turnguard run` and `turnguard proxy` tell the journal about a
 * turn, in the order readers rely on. When an attempt ends, the retry decision is written
 * first and the attempt's end after it, so a reader that sees a failed end always sees its
 * decision too. Telemetry, when on, is told of the same ends and stops (`exportTo`): one
 * place knows when a turn's last attempt has ended.
 */
import {
  JOURNAL_REPLY_BYTES,
  type JournalRecord,
  type Owner,
  type SettledWhy,
} from "../journal/records.ts";
import type { AgentAttempt, Outcome } from "../core/outcome.ts";
import { thisProcess } from "../journal/process_identity.ts";
import { decideRetry, type RetryDecision, type RetryPolicy } from "./policy.ts";
import { capUtf8 } from "../text/text.ts";
import type { TurnTelemetry } from "../telemetry/export.ts";

/** Where records go (the journal writer; tests pass an array). */
export interface JournalSink {
  append(record: JournalRecord): void;
}

/** A turn: which session, which number. */
export interface TurnKey {
  session: string;
  turn: number;
}

/** How a recorder is wired; `P` is its retry policy's type. */
export interface RecorderOptions<P extends RetryPolicy = RetryPolicy> {
  /** Null: nothing is journaled (retries still work). */
  journal: JournalSink | null;
  name: string;
  policy: P;
  /**
   * The owner recorded with every record: this process (its pid, start time and pid space,
   * read from the system) unless given.
   */
  owner?: Owner;
  /** The `writer` id of every record: drawn at random unless given. */
  writer?: string;
  now?: () => number;
  random?: () => number;
  /** Told once when the journal cannot be written; the turn goes on. */
  onJournalError?: (message: string) => void;
}

/**
 * The outcome as the journal keeps it: a reply longer than JOURNAL_REPLY_BYTES is cut to its
 * first bytes on a UTF-8 boundary (a copy; the caller's outcome is left whole).
 */
export function journaledOutcome(outcome: Outcome): { outcome: Outcome; truncated: boolean } {
  const text = outcome.reply.text;
  if (text === undefined) return { outcome, truncated: false };
  const kept = capUtf8(text, JOURNAL_REPLY_BYTES);
  if (kept === text) return { outcome, truncated: false };
  return { outcome: { ...outcome, reply: { ...outcome.reply, text: kept } }, truncated: true };
}

/** Records turns and decides their retries. `P` is the type of its retry policy. */
export class TurnRecorder<const P extends RetryPolicy = RetryPolicy> {
  readonly name: string;
  readonly policy: P;
  readonly #journal: JournalSink | null;
  readonly #owner: Owner;
  readonly #writer: string;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #onError: (message: string) => void;
  #failed = false;
  #telemetry: TurnTelemetry | null = null;

  constructor(opts: RecorderOptions<P>) {
    this.name = opts.name;
    this.policy = opts.policy;
    this.#journal = opts.journal;
    this.#owner = opts.owner ?? thisProcess();
    this.#writer = opts.writer ?? crypto.randomUUID();
    this.#now = opts.now ?? Date.now;
    this.#random = opts.random ?? Math.random;
    this.#onError = opts.onJournalError ?? (() => {});
  }

  /** Exports every attempt's end and every stopped retry to `telemetry` too. */
  exportTo(telemetry: TurnTelemetry | null): void {
    this.#telemetry = telemetry;
  }

  #common(key: TurnKey) {
    return {
      ts: new Date(this.#now()).toISOString(),
      name: this.name,
      session: key.session,
      turn: key.turn,
      ...this.#owner,
      writer: this.#writer,
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
    const decision = this.decide(attempt, outcome, sideEffects);
    this.recordEnd(key, attempt, outcome, decision);
    return decision;
  }

  /** What becomes of an attempt that just ended, by this recorder's policy (journals nothing). */
  decide(attempt: number, outcome: Outcome, sideEffects: boolean): RetryDecision {
    return decideRetry({ outcome, sideEffects, attempt }, this.policy, this.#random);
  }

  /** Journals an attempt's end: its retry decision first, then the end itself. */
  recordEnd(key: TurnKey, attempt: number, outcome: Outcome, decision: RetryDecision): void {
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
    const kept = journaledOutcome(outcome);
    this.#write({
      ...common,
      event: "turn_ended",
      attempt,
      outcome: kept.outcome,
      ...(kept.truncated ? { replyTruncated: true as const } : {}),
    });
    this.#telemetry?.attemptEnded(outcome, {
      session: key.session,
      turn: key.turn,
      attempt,
      final: decision.kind !== "retry",
    });
  }

  /**
   * The agent failed an attempt inside the running turn (observed live in its logs or
   * records): journaled as progress (`agent_attempt`).
   */
  agentAttempt(key: TurnKey, attempt: AgentAttempt): void {
    this.#write({ ...this.#common(key), event: "agent_attempt", ...attempt });
  }

  /**
   * An attempt's Outcome was revised after its end was journaled (the session records'
   * end landed late): the journal gets revision `revision` of it.
   */
  revised(key: TurnKey, attempt: number, revision: number, outcome: Outcome): void {
    const kept = journaledOutcome(outcome);
    this.#write({
      ...this.#common(key),
      event: "turn_revised",
      attempt,
      revision,
      outcome: kept.outcome,
      ...(kept.truncated ? { replyTruncated: true as const } : {}),
    });
    this.#telemetry?.turnRevised({ ...outcome, revision });
  }

  /** Retry `attempt` begins to run. */
  retryStarted(key: TurnKey, attempt: number): void {
    this.#write({ ...this.#common(key), event: "retry_started", attempt, of: this.policy.retries });
  }

  /** A waiting retry was stopped before it ran; `attempt` is the failed one before it. */
  stopped(key: TurnKey, attempt: number, reason: string): void {
    this.#settle(key, attempt, "stopped", reason);
    this.#telemetry?.retryStopped(key.session, key.turn);
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
