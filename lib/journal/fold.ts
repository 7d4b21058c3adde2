/**
 * Turn state: a pure fold of journal records into what each session's turns are doing —
 * running, ended with which outcome, and what became of the retry decision. `turnguard
 * wait`, `log` and `retry` are thin shells over it. Whether a turn's process still runs is
 * not in the journal: the shells check it and pass it in (`withOwner`).
 */
import type {
  JournalRecord,
  Owner,
  RetryScheduled,
  RetrySettled,
  RetryStarted,
} from "./records.ts";
import type { Outcome } from "../outcome.ts";

/** The retry decision of a turn as the journal last told it. */
export type RetryView =
  | (
    & { state: "waiting" }
    & Pick<
      RetryScheduled,
      "attempt" | "of" | "afterMs" | "nextAt" | "reason" | "pid" | "pidStart" | "pidSpace"
    >
  )
  | ({ state: "running" } & Pick<RetryStarted, "attempt" | "of">)
  | ({ state: "settled" } & Pick<RetrySettled, "attempt" | "of" | "why" | "reason">);

/** One turn of one session; its owner (pid, start time, pid space) as last recorded. */
export interface TurnView extends Owner {
  name: string;
  session: string;
  turn: number;
  /**
   * The owner is known to be gone while the turn is unfinished: it will never end. Never
   * set by the fold; `withOwner` sets it from a liveness check.
   */
  ownerGone: boolean;
  mode: "run" | "proxy" | null;
  agent: string | null;
  promptId: string | number | null;
  /** Time of the turn's first record. */
  startedAt: string;
  /** The attempt known to run last: 0 for the first try, k for the k-th retry. */
  attempt: number;
  /** The latest attempt has not ended yet. */
  running: boolean;
  /** The outcome of the last attempt that ended. */
  outcome: Outcome | null;
  endedAttempt: number | null;
  retry: RetryView | null;
  /** The attempt whose end `retry` decides (a retry_scheduled for k decides attempt k-1). */
  decidedAttempt: number | null;
  /** Journal order of the turn's first record. */
  seq: number;
}

/** One session: its turns by number. */
export interface SessionView {
  session: string;
  name: string;
  turns: Map<number, TurnView>;
  /** The highest turn number seen. */
  latest: number;
  /** Journal order of the latest turn's first record. */
  latestSeq: number;
}

/** Everything the journal says, by session. */
export interface JournalState {
  sessions: Map<string, SessionView>;
  seq: number;
}

/** The state before any record. */
export function emptyState(): JournalState {
  return { sessions: new Map(), seq: 0 };
}

function turnOf(state: JournalState, r: JournalRecord): TurnView {
  let session = state.sessions.get(r.session);
  if (!session) {
    session = { session: r.session, name: r.name, turns: new Map(), latest: r.turn, latestSeq: 0 };
    state.sessions.set(r.session, session);
  }
  session.name = r.name;
  let turn = session.turns.get(r.turn);
  if (!turn) {
    turn = {
      name: r.name,
      session: r.session,
      turn: r.turn,
      pid: r.pid,
      pidStart: r.pidStart,
      pidSpace: r.pidSpace,
      ownerGone: false,
      mode: null,
      agent: null,
      promptId: null,
      startedAt: r.ts,
      attempt: 0,
      running: true,
      outcome: null,
      endedAttempt: null,
      retry: null,
      decidedAttempt: null,
      seq: state.seq,
    };
    session.turns.set(r.turn, turn);
    if (r.turn >= session.latest) {
      session.latest = r.turn;
      session.latestSeq = state.seq;
    }
  }
  turn.pid = r.pid;
  turn.pidStart = r.pidStart;
  turn.pidSpace = r.pidSpace;
  return turn;
}

/** Applies one record to the state (the accumulator is owned by the fold). */
export function applyRecord(state: JournalState, r: JournalRecord): JournalState {
  state.seq++;
  const turn = turnOf(state, r);
  switch (r.event) {
    case "turn_started":
      turn.mode = r.mode;
      turn.agent = r.agent;
      turn.promptId = r.promptId;
      break;
    case "retry_scheduled":
      turn.retry = {
        state: "waiting",
        attempt: r.attempt,
        of: r.of,
        afterMs: r.afterMs,
        nextAt: r.nextAt,
        reason: r.reason,
        pid: r.pid,
        pidStart: r.pidStart,
        pidSpace: r.pidSpace,
      };
      turn.decidedAttempt = r.attempt - 1;
      break;
    case "retry_settled":
      turn.retry = { state: "settled", attempt: r.attempt, of: r.of, why: r.why, reason: r.reason };
      turn.decidedAttempt = r.attempt;
      break;
    case "retry_started":
      turn.retry = { state: "running", attempt: r.attempt, of: r.of };
      turn.attempt = Math.max(turn.attempt, r.attempt);
      turn.running = true;
      break;
    case "turn_ended":
      turn.outcome = r.outcome;
      turn.endedAttempt = r.attempt;
      turn.attempt = Math.max(turn.attempt, r.attempt);
      turn.running = r.attempt < turn.attempt;
      turn.mode ??= r.outcome.mode;
      turn.agent ??= r.outcome.agent;
      break;
  }
  return state;
}

/** Folds records, in journal order, into the state. */
export function foldRecords(
  records: readonly JournalRecord[],
  state: JournalState = emptyState(),
): JournalState {
  for (const r of records) applyRecord(state, r);
  return state;
}

/** Where a turn stands for someone waiting on it. */
export type Verdict =
  /** An attempt (the first or a retry) is running. */
  | { kind: "running" }
  /** An attempt failed but its retry decision is not in the journal (yet). */
  | { kind: "pending" }
  /** The turn ended and its retry decision, if it needed one, is known. */
  | { kind: "done"; failed: boolean };

/**
 * Whether a turn is finished for `turnguard wait`. A turn whose owner is gone is finished:
 * unfinished, it failed; a missing retry decision will never come.
 */
export function verdict(turn: TurnView): Verdict {
  if (turn.running || turn.outcome === null) {
    return turn.ownerGone ? { kind: "done", failed: true } : { kind: "running" };
  }
  if (turn.outcome.status !== "failed") return { kind: "done", failed: false };
  const decided = turn.retry !== null && turn.retry.state !== "running" &&
    turn.decidedAttempt === turn.endedAttempt;
  return decided || turn.ownerGone ? { kind: "done", failed: true } : { kind: "pending" };
}

/** Whether a turn still waits on its owner: an attempt runs or a decision is missing. */
export function awaitsOwner(turn: TurnView): boolean {
  return verdict(turn).kind !== "done";
}

/**
 * The turn with its owner's liveness: when the owner is gone and the turn awaits it, the
 * turn is marked `ownerGone` (a copy; the state is left as folded).
 */
export function withOwner(turn: TurnView, ownerAlive: boolean): TurnView {
  return ownerAlive || !awaitsOwner(turn) ? turn : { ...turn, ownerGone: true };
}

/**
 * Finds a session: by exact session id, else the most recent session with that name;
 * without a target, the session whose latest turn started last. Null when none matches.
 */
export function findSession(state: JournalState, target?: string): SessionView | null {
  if (target !== undefined) {
    const exact = state.sessions.get(target);
    if (exact) return exact;
  }
  let best: SessionView | null = null;
  for (const s of state.sessions.values()) {
    if (target !== undefined && s.name !== target) continue;
    if (best === null || s.latestSeq > best.latestSeq) best = s;
  }
  return best;
}

/** The latest turn of a session. */
export function latestTurn(session: SessionView): TurnView {
  return session.turns.get(session.latest)!;
}

/** The most recent turns (by when they started), oldest first, optionally of one session. */
export function recentTurns(
  state: JournalState,
  limit: number,
  session?: SessionView,
): TurnView[] {
  const sessions = session ? [session] : [...state.sessions.values()];
  const turns = sessions.flatMap((s) => [...s.turns.values()]).sort((a, b) => a.seq - b.seq);
  return turns.slice(Math.max(0, turns.length - limit));
}
