/**
 * Turn state: a pure fold of journal records into what each session's turns are doing —
 * running, ended with which outcome, and what became of the retry decision. `turnguard
 * wait`, `log` and `retry` are thin shells over it. Whether a turn's process still runs is
 * not in the journal: the shells check it and pass it in (`withOwner`).
 */
import * as v from "valibot";
import {
  type AgentAttemptRecord,
  type JournalRecord,
  type Owner,
  type RecordHead,
  type RetryScheduled,
  type RetrySettled,
  type RetryStarted,
  turnKey,
  type TurnRevised,
  writerKey,
} from "./records.ts";
import { type AgentAttempt, AgentAttemptSchema, type Outcome } from "../core/outcome.ts";
import type { OwnerState } from "./process_identity.ts";
import type { RecordsRead } from "./reader.ts";

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
  /** Session, number and writer (`turnKey`): a turn number alone repeats across processes. */
  key: string;
  name: string;
  session: string;
  turn: number;
  /**
   * The owner is known to be gone while the turn is unfinished (it will never end), or
   * while its retry waits (it will never run). Never set by the fold; `withOwner` and
   * `withRetryOwnerGone` set it from a liveness check.
   */
  ownerGone: boolean;
  /**
   * A record of this turn was cut short (a full disk): what it said is lost. Set by
   * `applyTorn`.
   */
  torn: boolean;
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
  /**
   * The agent's own failed attempts recorded (`agent_attempt`) in the turn's latest try; null
   * when none was. Bounded: a count and the last AGENT_ATTEMPTS_KEPT.
   */
  agentAttempts: AgentAttemptsView | null;
  /**
   * The last revision of the ended attempt's Outcome (`turn_revised`: the session records'
   * end landed late), and the status the turn was first recorded with; absent when none.
   */
  revised?: { revision: number; from: Outcome["status"] };
  /**
   * Journal order of the turn's first record: when it happened, across writer processes.
   * Turns are ordered by it, never by their number.
   */
  seq: number;
}

/**
 * The last this many agent attempts of a turn are kept (with the count of all): a turn whose
 * agent retried thousands of times costs the fold no more than one that retried five.
 */
export const AGENT_ATTEMPTS_KEPT = 5;

/** The agent's own attempts in a turn's latest try, as the journal recorded them. */
export interface AgentAttemptsView {
  /** How many were recorded. */
  count: number;
  /** The last AGENT_ATTEMPTS_KEPT at most, oldest first; the last is the latest. */
  recent: AgentAttempt[];
}

/** Everything the journal says, by turn (`turnKey`). */
export interface JournalState {
  turns: Map<string, TurnView>;
  seq: number;
}

/** The state before any record. */
export function emptyState(): JournalState {
  return { turns: new Map(), seq: 0 };
}

/** The identity fields of a record or of a torn record's head. */
type TurnId = Pick<RecordHead, "ts" | "name" | "session" | "turn" | "writer"> & Owner;

function turnOf(state: JournalState, id: TurnId): TurnView {
  const key = turnKey(id);
  let turn = state.turns.get(key);
  if (!turn) {
    turn = {
      key,
      name: id.name,
      session: id.session,
      turn: id.turn,
      pid: id.pid,
      pidStart: id.pidStart,
      pidSpace: id.pidSpace,
      ownerGone: false,
      torn: false,
      mode: null,
      agent: null,
      promptId: null,
      startedAt: id.ts,
      attempt: 0,
      running: true,
      outcome: null,
      endedAttempt: null,
      retry: null,
      decidedAttempt: null,
      agentAttempts: null,
      seq: state.seq,
    };
    state.turns.set(key, turn);
  }
  turn.name = id.name;
  turn.pid = id.pid;
  turn.pidStart = id.pidStart;
  turn.pidSpace = id.pidSpace;
  return turn;
}

/**
 * Applies the head of a record that was cut short: the turn it names has lost a record, so
 * an unfinished end may be in it (see `ending` in report.ts).
 */
export function applyTorn(state: JournalState, head: RecordHead): JournalState {
  state.seq++;
  turnOf(state, head).torn = true;
  return state;
}

/** Applies one record to the state (the accumulator is owned by the fold). */
export function applyRecord(state: JournalState, r: JournalRecord): JournalState {
  state.seq++;
  const turn = turnOf(state, { ...r, writer: writerKey(r) });
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
      // A new try of the turn: the agent's attempts of the last one are not its progress.
      turn.agentAttempts = null;
      turn.attempt = Math.max(turn.attempt, r.attempt);
      turn.running = true;
      break;
    case "turn_revised":
      reviseTurn(turn, r);
      break;
    case "turn_ended":
      delete turn.revised;
      turn.outcome = r.outcome;
      turn.endedAttempt = r.attempt;
      turn.attempt = Math.max(turn.attempt, r.attempt);
      turn.running = r.attempt < turn.attempt;
      turn.mode ??= r.outcome.mode;
      turn.agent ??= r.outcome.agent;
      break;
    case "agent_attempt":
      turn.agentAttempts = withAgentAttempt(turn.agentAttempts, r);
      break;
  }
  return state;
}

/** The attempts with one more recorded: counted, and kept among the last few. */
export function withAgentAttempt(
  seen: AgentAttemptsView | null,
  r: AgentAttemptRecord,
): AgentAttemptsView {
  // The attempt's own fields, as its schema names them (the journal's common fields dropped).
  const attempt: AgentAttempt = v.parse(AgentAttemptSchema(), r);
  const recent = [...(seen?.recent ?? []), attempt];
  return {
    count: (seen?.count ?? 0) + 1,
    recent: recent.slice(Math.max(0, recent.length - AGENT_ATTEMPTS_KEPT)),
  };
}

/**
 * A revision of an attempt's Outcome: it replaces the Outcome of that attempt when that is
 * the one the turn last ended with (a revision of an earlier attempt is history).
 */
function reviseTurn(turn: TurnView, r: TurnRevised): void {
  if (turn.endedAttempt !== r.attempt || turn.outcome === null) return;
  turn.revised = { revision: r.revision, from: turn.revised?.from ?? turn.outcome.status };
  turn.outcome = r.outcome;
}

/** Folds what a reader read — records and torn records, in journal order — into the state. */
export function foldRead(read: RecordsRead, state: JournalState = emptyState()): JournalState {
  let t = 0;
  for (let i = 0; i <= read.records.length; i++) {
    while (t < read.torn.length && read.torn[t].before <= i) applyTorn(state, read.torn[t++].head);
    if (i < read.records.length) applyRecord(state, read.records[i]);
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

/** A waiting retry this late without starting is overdue: its process most likely died. */
export const OVERDUE_MS = 60_000;

/**
 * Whether the process that holds a waiting retry can still run it, from its liveness and
 * how late the retry is: `gone` (it exited, or its pid names another process), `likely_gone`
 * (it cannot be verified, and the retry is overdue by more than OVERDUE_MS), `elsewhere` (on
 * another host or in another pid namespace: not checkable from here), else `can_run`. The
 * one check `turnguard retry` (before it signals) and `turnguard wait` (before it announces
 * the retry) share.
 */
export function retryOwner(
  owner: OwnerState,
  lateMs: number,
): "can_run" | "gone" | "likely_gone" | "elsewhere" {
  if (owner === "gone") return "gone";
  if (owner === "elsewhere") return "elsewhere";
  if (owner === "unverified" && lateMs > OVERDUE_MS) return "likely_gone";
  return "can_run";
}

/**
 * The turn with its waiting retry's owner known to be gone: that retry will never run (a
 * copy, marked `ownerGone`; the state is left as folded). Other turns are returned as they are.
 */
export function withRetryOwnerGone(turn: TurnView): TurnView {
  return turn.retry?.state === "waiting" && !awaitsOwner(turn)
    ? { ...turn, ownerGone: true }
    : turn;
}

/**
 * Whether a turn is one `wait`, `log` or `retry` was asked for: its session id or its name
 * is the target; every turn without a target.
 */
export function isTarget(turn: { session: string; name: string }, target?: string): boolean {
  return target === undefined || turn.session === target || turn.name === target;
}

/**
 * The latest turn (the one that started last, in journal order) whose session id or name
 * is the target; without a target, the latest turn of the journal. Null when none matches.
 */
export function latestTurn(state: JournalState, target?: string): TurnView | null {
  let best: TurnView | null = null;
  for (const t of state.turns.values()) {
    if (isTarget(t, target) && (best === null || t.seq > best.seq)) best = t;
  }
  return best;
}

/** The most recent turns (by when they started), oldest first, optionally of one target. */
export function recentTurns(state: JournalState, limit: number, target?: string): TurnView[] {
  const turns = [...state.turns.values()].filter((t) => isTarget(t, target))
    .sort((a, b) => a.seq - b.seq);
  return turns.slice(Math.max(0, turns.length - limit));
}
