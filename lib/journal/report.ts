/**
 * Turn reports: how a turn's state reads for people (`wait --print`, `log`) and for
 * machines (`wait --json`, `log --json`). Pure: the clock is passed in.
 */
import type { AgentAttempt, Outcome, TurnError } from "../core/outcome.ts";
import { formatDuration, utf8Length } from "../text/text.ts";
import { OVERDUE_MS, type RetryView, type TurnView } from "./fold.ts";

/** The retry part of a machine row. */
export interface RetryRow {
  state: "waiting" | "settled" | "unknown";
  /** The waiting retry's number, or the last attempt that ran when settled. */
  attempt: number | null;
  of: number | null;
  reason: string;
  nextAt: string | null;
  why: string | null;
}

/**
 * A turn's status in a report: the Outcome's, `running`, or `incomplete` — its process is
 * gone and a record it wrote was cut short (a full disk), so how it ended is unknown.
 */
export type ReportStatus = Outcome["status"] | "running" | "incomplete";

/** The machine row of `wait --json`. */
export interface WaitRow {
  name: string;
  session: string;
  turn: number;
  status: ReportStatus;
  error: TurnError | null;
  retry: RetryRow | null;
  /** The turn's own reply (a failed turn's own streamed text), never an earlier turn's. */
  reply: string;
  /** The agent's own failed attempts recorded in the turn's latest try; null when none. */
  agentAttempts: AgentAttemptsRow | null;
  /** The Outcome was revised after the turn ended (see RevisionRow); absent: it was not. */
  revised?: RevisionRow;
}

/** The machine form of a turn's agent attempts (`wait --json`, `log --json`). */
export interface AgentAttemptsRow {
  /** How many the journal recorded in the turn's latest try. */
  count: number;
  /** The last few (at most AGENT_ATTEMPTS_KEPT), oldest first, as recorded. */
  recent: AgentAttempt[];
  /**
   * When the agent said it tries next: the latest attempt's `at` plus its `nextInMs`; null
   * when it did not say.
   */
  nextAt: string | null;
}

/** The agent attempts of a turn for a machine row; null when none was recorded. */
export function agentAttemptsRow(turn: TurnView): AgentAttemptsRow | null {
  const seen = turn.agentAttempts;
  if (seen === null) return null;
  const latest = seen.recent[seen.recent.length - 1];
  return { count: seen.count, recent: seen.recent, nextAt: nextAttemptAt(latest) };
}

/** When the agent said it tries again after this attempt (ISO); null when it did not say. */
function nextAttemptAt(attempt: AgentAttempt): string | null {
  const at = Date.parse(attempt.at);
  if (attempt.nextInMs === undefined || Number.isNaN(at)) return null;
  return new Date(at + attempt.nextInMs).toISOString();
}

/**
 * `retrying: rate_limit, attempt 3, next in 8s (the agent's own retry)` — what a running
 * turn's agent is doing, from its latest recorded attempt; `now` is the clock. A cause that
 * retrying cannot cure says so.
 */
export function progressLine(attempt: AgentAttempt, now: number): string {
  const nextAt = nextAttemptAt(attempt);
  let next = "";
  if (nextAt !== null) {
    const left = Date.parse(nextAt) - now;
    next = left > 0
      ? `, next in ${formatDuration(left)}`
      : `, next was due ${formatDuration(-left)} ago`;
  }
  const own = attempt.retryable
    ? "the agent's own retry"
    : `the agent's own retry; ${attempt.category} is not retryable`;
  return `retrying: ${attempt.category}, attempt ${attempt.n}${next} (${own})`;
}

/** The progress line of a running turn whose agent retries; null for any other turn. */
export function turnProgress(turn: TurnView, now: number): string | null {
  const seen = turn.agentAttempts;
  if (seen === null || ending(turn).status !== "running") return null;
  return progressLine(seen.recent[seen.recent.length - 1], now);
}

/** A revised Outcome in a machine row: the revision's number and the first status. */
export interface RevisionRow {
  revision: number;
  from: Outcome["status"];
}

/** The revision fields of a row: present only for a turn whose Outcome was revised. */
function revisionFields(turn: TurnView): { revised?: RevisionRow } {
  return turn.revised && !turn.running
    ? { revised: { revision: turn.revised.revision, from: turn.revised.from } }
    : {};
}

/**
 * `turn 3 was revised (revision 1): first recorded ok, now failed` — what `wait` says of a
 * turn whose Outcome changed after it ended; null for any other turn.
 */
export function revisionNote(turn: TurnView): string | null {
  const r = revisionFields(turn).revised;
  if (!r || !turn.outcome) return null;
  return `turn ${turn.turn} was revised (revision ${r.revision}): its session records ` +
    `landed late; first recorded ${r.from}, now ${turn.outcome.status}`;
}

/** The error a report gives a turn whose process is gone before the turn ended. */
export function ownerGoneError(pid: number): TurnError {
  return {
    code: null,
    message: `its process (pid ${pid}) is gone`,
    category: "crash",
    anchor: null,
    source: null,
  };
}

/** The error a report gives a turn whose process is gone after a record of it was torn. */
export function incompleteError(pid: number): TurnError {
  return {
    code: null,
    message: `its process (pid ${pid}) is gone and a journal record of the turn is ` +
      "incomplete (cut short, e.g. by a full disk): how the turn ended is unknown",
    category: "unknown",
    anchor: null,
    source: null,
  };
}

/**
 * How a report reads a turn's end: from its outcome; when its process is gone before the
 * end, a failure — or `incomplete` when a record of the turn was torn (the end may have
 * been in it).
 */
interface Ending {
  status: ReportStatus;
  error: TurnError | null;
  /** The turn's own reply text. */
  reply: string;
  /** The turn ended without its process: no outcome will come. */
  orphaned: boolean;
}

function ending(turn: TurnView): Ending {
  if (turn.running || turn.outcome === null) {
    if (!turn.ownerGone) return { status: "running", error: null, reply: "", orphaned: false };
    return turn.torn
      ? { status: "incomplete", error: incompleteError(turn.pid), reply: "", orphaned: true }
      : { status: "failed", error: ownerGoneError(turn.pid), reply: "", orphaned: true };
  }
  const o = turn.outcome;
  return { status: o.status, error: o.error, reply: o.reply.text ?? "", orphaned: false };
}

/** The retry row; `unknown` when a failed turn's decision never reached the journal. */
export function retryRow(turn: TurnView): RetryRow | null {
  const r = turn.retry;
  const end = ending(turn);
  const failed = end.status === "failed";
  if (
    failed && (end.orphaned || r === null || r.state === "running" ||
      turn.decidedAttempt !== turn.endedAttempt)
  ) {
    return {
      state: "unknown",
      attempt: null,
      of: null,
      reason: turn.ownerGone ? "its process is gone" : "no retry decision was recorded",
      nextAt: null,
      why: null,
    };
  }
  if (r === null || r.state === "running") return null;
  if (r.state === "waiting" && turn.ownerGone) {
    return {
      state: "unknown",
      attempt: r.attempt,
      of: r.of,
      reason: `its process (pid ${r.pid}) is gone; retry ${r.attempt} of ${r.of} will not run`,
      nextAt: null,
      why: null,
    };
  }
  if (r.state === "waiting") {
    return {
      state: "waiting",
      attempt: r.attempt,
      of: r.of,
      reason: r.reason,
      nextAt: r.nextAt,
      why: null,
    };
  }
  return {
    state: "settled",
    attempt: r.attempt,
    of: r.of,
    reason: r.reason,
    nextAt: null,
    why: r.why,
  };
}

/** The row `wait --json` prints for a turn. */
export function waitRow(turn: TurnView): WaitRow {
  const end = ending(turn);
  return {
    name: turn.name,
    session: turn.session,
    turn: turn.turn,
    status: end.status,
    error: end.error,
    retry: retryRow(turn),
    reply: end.reply,
    agentAttempts: agentAttemptsRow(turn),
    ...revisionFields(turn),
  };
}

/** `NAME  ready: turn failed, retry waits` — the state line of a finished turn. */
export function stateLine(turn: TurnView): string {
  const end = ending(turn);
  if (end.status === "incomplete") {
    return `${turn.name}  ready: turn incomplete (its process is gone, its record was cut short)`;
  }
  if (end.orphaned) return `${turn.name}  ready: turn failed (its process is gone)`;
  if (turn.running || turn.outcome === null) {
    const r = turn.retry;
    const retry = r?.state === "running" ? ` (retry ${r.attempt} of ${r.of})` : "";
    return `${turn.name}  running: turn ${turn.turn}${retry}`;
  }
  const status = turn.outcome.status + (turn.revised ? ` (revised from ${turn.revised.from})` : "");
  const waits = turn.retry?.state === "waiting" && !turn.ownerGone &&
    turn.decidedAttempt === turn.endedAttempt;
  return `${turn.name}  ready: turn ${status}${waits ? ", retry waits" : ""}`;
}

/**
 * `retry 1 of 2 waits out capacity; the next attempt runs in 1m12s (turnguard retry NAME
 * runs it now)`, or why none waits. `handle` is what `turnguard retry` should be given.
 */
export function retryLine(turn: TurnView, handle: string, now: number): string {
  const row = retryRow(turn);
  if (row === null) return "no retry waits";
  if (row.state === "unknown") return `no retry waits (${row.reason})`;
  if (row.state === "settled") return `no retry waits (${row.reason})`;
  const r = turn.retry as Extract<RetryView, { state: "waiting" }>;
  const head = `retry ${r.attempt} of ${r.of} waits out ${r.reason}`;
  const left = Date.parse(r.nextAt) - now;
  if (left < -OVERDUE_MS) {
    return `${head}; it was due ${
      formatDuration(-left)
    } ago and has not started (its process, pid ${r.pid}, may be gone)`;
  }
  const when = left > 0 ? `runs in ${formatDuration(left)}` : "is due now";
  return `${head}; the next attempt ${when} (turnguard retry ${handle} runs it now)`;
}

function withNewline(text: string): string {
  return text === "" || text.endsWith("\n") ? text : text + "\n";
}

/**
 * What `wait --print` prints. An ok turn: its own reply. A failed one: the state line, the
 * readable cause, its own streamed text when it had any, and the retry that waits or why
 * none does. A truncated one with a cause (a reply cut off: docs/EVIDENCE.md): the state
 * line, the cause and its partial text.
 */
export function printReport(turn: TurnView, handle: string, now: number): string {
  const end = ending(turn);
  if (end.status === "running") {
    const progress = turnProgress(turn, now);
    return stateLine(turn) + "\n" + (progress === null ? "" : progress + "\n");
  }
  if (end.status === "incomplete") {
    return `${stateLine(turn)}\nerror: ${incompleteError(turn.pid).message}\n`;
  }
  // A reply cut short never prints as if it were whole: its state and cause come first.
  if (end.status === "truncated" && end.error) {
    return `${stateLine(turn)}\nerror: ${end.error.message}\n${withNewline(end.reply)}`;
  }
  if (end.status !== "failed") return withNewline(end.reply);
  const cause = end.error?.message ?? "the turn failed without a known cause";
  return `${stateLine(turn)}\nerror: ${cause}\n${withNewline(end.reply)}${
    retryLine(turn, handle, now)
  }\n`;
}

/**
 * A note when the reply shown is not all the turn produced: run and proxy keep the first
 * 64 KiB of a reply, and so does the journal.
 */
export function replyNote(outcome: Outcome | null): string | null {
  if (!outcome) return null;
  const { text, chars } = outcome.reply;
  if (text === undefined) {
    return chars > 0 ? `the reply (${chars} characters) was not kept in the journal` : null;
  }
  if (text.length < chars) {
    return `only the first ${utf8Length(text)} bytes of the reply (${chars} characters) were kept`;
  }
  return null;
}

/** The short retry column of `log`. */
function retrySummary(turn: TurnView): string {
  const end = ending(turn);
  if (end.status === "incomplete") return "record incomplete";
  if (end.orphaned || (turn.ownerGone && turn.retry?.state === "waiting")) return "process gone";
  const r = turn.retry;
  if (r === null) return turn.outcome?.status === "failed" ? "no retry decision" : "";
  switch (r.state) {
    case "waiting":
      return `retry ${r.attempt}/${r.of} waits`;
    case "running":
      return `retry ${r.attempt}/${r.of} running`;
    case "settled":
      switch (r.why) {
        case "succeeded":
          return `succeeded on retry ${r.attempt}/${r.of}`;
        case "stopped":
          return "retry stopped";
        case "off":
          return "retries off";
        case "not_retryable":
          return "not retryable";
        case "exhausted":
          return `retries exhausted (${r.of}/${r.of})`;
      }
  }
}

/** The machine row of `log --json`. */
export interface LogRow {
  startedAt: string;
  name: string;
  session: string;
  turn: number;
  status: ReportStatus;
  category: string | null;
  durationMs: number | null;
  attempts: number;
  retry: RetryRow | null;
  error: string | null;
  /** The agent's own failed attempts recorded in the turn's latest try; null when none. */
  agentAttempts: AgentAttemptsRow | null;
  /** The Outcome was revised after the turn ended; absent: it was not. */
  revised?: RevisionRow;
}

/** The row `log --json` prints for a turn. */
export function logRow(turn: TurnView): LogRow {
  const end = ending(turn);
  const open = end.status === "running";
  return {
    startedAt: turn.startedAt,
    name: turn.name,
    session: turn.session,
    turn: turn.turn,
    status: end.status,
    category: end.error?.category ?? null,
    durationMs: open || end.orphaned ? null : turn.outcome?.durationMs ?? null,
    attempts: turn.attempt + 1,
    retry: open ? null : retryRow(turn),
    error: end.error?.message ?? null,
    agentAttempts: agentAttemptsRow(turn),
    ...revisionFields(turn),
  };
}

/**
 * `log` for people: one aligned line per turn; a running turn whose agent retries shows its
 * progress (`progressLine`) in the last column. `now` is the clock.
 */
export function formatLog(turns: readonly TurnView[], now: number): string {
  const rows = turns.map((t) => {
    const row = logRow(t);
    return [
      row.startedAt.replace(/\.\d+Z$/, "Z"),
      row.name,
      row.session,
      `#${row.turn}`,
      row.revised ? `${row.status} (revised from ${row.revised.from})` : row.status,
      row.category ?? "-",
      row.durationMs === null ? "-" : formatDuration(row.durationMs),
      row.status === "running"
        ? [t.retry?.state === "running" ? retrySummary(t) : "", turnProgress(t, now) ?? ""]
          .filter((c) => c !== "").join("; ")
        : retrySummary(t),
    ];
  });
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i].length))) ?? [];
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd() + "\n")
    .join("");
}
