/**
 * `turnguard wait [NAME|SESSION] [--print] [--json] [--timeout S]`: waits until the latest
 * turn of a session has ended and its retry decision is known, then reports it — a failed
 * turn with its own error, its own partial reply and the retry that waits, never the reply
 * of the turn before it. The latest turn is the one that started last (journal order) among
 * those whose session id or name is the target. A turn whose process is gone is reported
 * failed (or incomplete, when a record of it was cut short), never waited on for ever; with
 * --timeout, a session that is not in the journal yet is waited for. While the turn runs,
 * each new attempt the journal records of its agent retrying is told on stderr
 * (`retrying: rate_limit, attempt 3, next in 8s (the agent's own retry)`); stdout carries
 * only the report.
 */
import { type Stats, statSync } from "node:fs";
import { EXIT, TurnguardError, UsageError } from "../errors.ts";
import { fileKind } from "../io/private_file.ts";
import { journalPath } from "../journal/files.ts";
import { type JournalRead, JournalReader } from "../journal/reader.ts";
import { type Owner, type RecordHead, turnKey } from "../journal/records.ts";
import { readTail } from "../journal/tail.ts";
import { type ChangeSignal, JournalWatch } from "../journal/watch.ts";
import { type OwnerState, ownerState } from "../journal/process_identity.ts";
import {
  printReport,
  replyNote,
  revisionNote,
  stateLine,
  turnProgress,
  waitRow,
} from "../journal/report.ts";
import {
  awaitsOwner,
  emptyState,
  foldRead,
  type JournalState,
  latestTurn,
  retryOwner,
  type TurnView,
  verdict,
  withOwner,
  withRetryOwnerGone,
} from "../journal/fold.ts";
import { envRecord, type OptionSpec, parseOptions, parseSeconds } from "./args.ts";
import { stdoutSink, warnLine, writeShown } from "../io/output.ts";

/** The exit codes of `turnguard wait`. */
export const WAIT_EXIT = {
  ok: 0,
  failed: EXIT.failed,
  usage: EXIT.usage,
  timedOut: 3,
  noSession: 4,
  /**
   * The turn's process is gone and a record it wrote was cut short (a full disk): how the
   * turn ended is unknown.
   */
  incomplete: 5,
  /** The journal path holds a FIFO, directory or other non-regular file. */
  notAFile: 6,
} as const;

/** A failed turn whose retry decision is missing is held this long, then reported. */
export const PENDING_HOLD_MS = 5_000;
/** Re-read at least this often, changes or not. */
export const TICK_MS = 1_000;

/** The flags `turnguard wait` accepts. */
export const WAIT_OPTIONS = {
  print: { type: "boolean" },
  json: { type: "boolean" },
  timeout: { type: "string" },
  journal: { type: "string" },
} satisfies OptionSpec;

/** How waiting ended; a timeout's turn is null when no such session appeared. */
export type WaitResult =
  | { kind: "done"; turn: TurnView }
  | { kind: "timeout"; turn: TurnView | null }
  | { kind: "none" };

/** What the waiting loop needs from the world. */
export interface WaitDeps {
  read(): JournalRead;
  changes: ChangeSignal;
  now(): number;
  /** Told about each skipped line once. */
  diagnostic(line: string): void;
  /** The heads of the live file's last line that has no newline yet (see `heldHeads`). */
  held(): RecordHead[];
  /**
   * Whether the process that owns a turn may still run: false only when it is known to be
   * gone (an owner on another host or in another pid namespace cannot be checked).
   */
  ownerAlive(owner: Owner): boolean;
  /**
   * Told of the target's running turn when a read brought a new attempt of its agent (an
   * `agent_attempt` record): the turn as folded, its latest attempt the new one.
   */
  progress(turn: TurnView): void;
}

/**
 * Reads and folds the journal until the target's latest turn is done (or its missing
 * decision was held PENDING_HOLD_MS, or its process is gone), or the timeout passes. With
 * no such session: `none` at once without a timeout, else it is waited for.
 */
export async function waitForTurn(
  target: string | undefined,
  timeoutMs: number | null,
  deps: WaitDeps,
): Promise<WaitResult> {
  const deadline = timeoutMs === null ? Infinity : deps.now() + timeoutMs;
  let state: JournalState = emptyState();
  const pendingSince = new Map<string, number>();
  const told = new Set<string>();
  /** Agent attempts already told of, by turn and try. */
  const progressTold = new Map<string, number>();
  const latest = (): TurnView | null => {
    const read = deps.read();
    if (read.reset) state = emptyState();
    foldRead(read, state);
    for (const d of read.diagnostics) {
      if (!told.has(d)) told.add(d), deps.diagnostic(d);
    }
    return latestTurn(state, target);
  };
  for (;;) {
    let turn = latest();
    if (turn !== null && awaitsOwner(turn) && !deps.ownerAlive(turn)) {
      // It may have written its end just before it exited: everything it wrote is in the
      // journal now, so one more read tells.
      const probed = turn;
      turn = latest();
      if (turn?.key === probed.key) {
        // A last line of this turn without its newline will never be completed: cut short.
        const key = turn.key;
        if (deps.held().some((head) => turnKey(head) === key)) turn = { ...turn, torn: true };
        turn = withOwner(turn, false);
      }
    }
    const now = deps.now();
    if (turn === null) {
      if (timeoutMs === null) return { kind: "none" };
      if (now >= deadline) return { kind: "timeout", turn: null };
      await deps.changes.next(Math.min(TICK_MS, deadline - now));
      continue;
    }
    const v = verdict(turn);
    let wakeIn = TICK_MS;
    if (v.kind === "done") return { kind: "done", turn };
    if (v.kind === "running" && turn.agentAttempts !== null) {
      const key = `${turn.key}\n${turn.attempt}`;
      if ((progressTold.get(key) ?? 0) < turn.agentAttempts.count) {
        progressTold.set(key, turn.agentAttempts.count);
        deps.progress(turn);
      }
    }
    if (v.kind === "pending") {
      // Per turn (its key names the writer too) and attempt.
      const key = `${turn.key}\n${turn.endedAttempt}`;
      const since = pendingSince.get(key) ?? now;
      pendingSince.set(key, since);
      if (now - since >= PENDING_HOLD_MS) return { kind: "done", turn };
      wakeIn = Math.min(wakeIn, since + PENDING_HOLD_MS - now);
    }
    if (now >= deadline) return { kind: "timeout", turn };
    await deps.changes.next(Math.min(wakeIn, deadline - now));
  }
}

/**
 * The journal `wait`, `log` and `retry` read: `--journal`, `$TURNGUARD_JOURNAL` or the
 * default. Something other than a regular file there (a FIFO would block the reader for
 * ever) is an error with its own exit code.
 */
export function readableJournalPath(flag: string | undefined): string {
  const path = journalPath(flag, envRecord(), process.cwd());
  let st: Stats;
  try {
    st = statSync(path);
  } catch {
    return path;
  }
  if (!st.isFile()) {
    throw new TurnguardError(
      `journal ${path} is ${fileKind(st)}, not a regular file`,
      WAIT_EXIT.notAFile,
    );
  }
  return path;
}

/** Runs `turnguard wait ARGS` and returns the exit code. */
export async function waitCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseOptions("wait", argv, WAIT_OPTIONS, true);
  if (positionals.length > 1) {
    throw new UsageError(`wait: expected at most one NAME or SESSION, got ${positionals.length}`);
  }
  if (values.print && values.json) {
    throw new UsageError("wait: --print and --json exclude each other");
  }
  const timeout = parseSeconds("--timeout", values.timeout);
  const target = positionals[0];
  const path = readableJournalPath(values.journal);
  // The first read is from the journal's end (only the target's latest turn is parsed);
  // later reads follow what is appended from there.
  const changes = new JournalWatch(path);
  const tail = readTail(path, { target, limit: 1 });
  const reader = new JournalReader(path, tail.cursors);
  let first: JournalRead | null = { ...tail, reset: false };
  let result: WaitResult;
  try {
    result = await waitForTurn(target, timeout === undefined ? null : timeout * 1000, {
      read: () => {
        const read = first ?? reader.read();
        first = null;
        return read;
      },
      changes,
      now: Date.now,
      diagnostic: (d) => warnLine(`turnguard: ${d}`),
      held: () => reader.heldHeads(),
      ownerAlive: (owner) => ownerState(owner) !== "gone",
      progress: (turn) => {
        const line = turnProgress(turn, Date.now());
        if (line !== null) warnLine(`turnguard: ${turn.name} turn ${turn.turn}: ${line}`);
      },
    });
  } finally {
    changes.close();
  }
  if (result.kind === "none") {
    throw new TurnguardError(
      target === undefined
        ? `wait: no session in the journal ${path}`
        : `wait: no such session or name "${target}" in the journal ${path}`,
      WAIT_EXIT.noSession,
    );
  }
  if (result.kind === "timeout") {
    const { turn } = result;
    const progress = turn === null ? null : turnProgress(turn, Date.now());
    const what = turn !== null
      ? `${turn.name} turn ${turn.turn} (session ${turn.session}) has not finished${
        progress === null ? "" : `; ${progress}`
      }`
      : target === undefined
      ? `no session appeared in the journal ${path}`
      : `no session or name "${target}" appeared in the journal ${path}`;
    warnLine(`turnguard: wait: timed out after ${values.timeout}s; ${what}`);
    return WAIT_EXIT.timedOut;
  }
  const turn = waitingRetryChecked(result.turn, ownerState);
  const { status } = waitRow(turn);
  if (values.json) {
    void stdoutSink.json(waitRow(turn));
  } else if (values.print) {
    writeShown(printReport(turn, target ?? turn.name, Date.now()));
    const note = replyNote(turn.outcome);
    if (note) warnLine(`turnguard: ${note}`);
    const revision = revisionNote(turn);
    if (revision) warnLine(`turnguard: ${revision}`);
  } else {
    writeShown(stateLine(turn) + "\n");
  }
  return status === "failed"
    ? WAIT_EXIT.failed
    : status === "incomplete"
    ? WAIT_EXIT.incomplete
    : WAIT_EXIT.ok;
}

/**
 * The turn, with a waiting retry whose process is gone marked so (`withRetryOwnerGone`): it
 * will never run, so it is not announced. The check is the one `turnguard retry` makes.
 */
export function waitingRetryChecked(
  turn: TurnView,
  owner: (owner: Owner) => OwnerState,
  now: number = Date.now(),
): TurnView {
  const r = turn.retry;
  if (r?.state !== "waiting") return turn;
  const holder = retryOwner(owner(r), now - Date.parse(r.nextAt));
  return holder === "gone" ? withRetryOwnerGone(turn) : turn;
}
