/**
 * `turnguard retry NAME|SESSION`: makes the retry that waits for that session's latest
 * turn run now, by signalling the turnguard process that owns it (its pid is in the
 * journal) with SIGUSR1 — only once that process is known to be the owner still: a pid
 * reused by another process is never signalled (SIGUSR1 would kill most programs).
 */
import { EXIT, TurnguardError, UsageError } from "../errors.ts";
import type { Owner } from "../journal/records.ts";
import { errCode } from "../io/logfs.ts";
import { type OwnerState, ownerState } from "../journal/process_identity.ts";
import { RUN_NOW_SIGNAL } from "../retry/waits.ts";
import { readTail } from "../journal/tail.ts";
import { foldRead, latestTurn, retryOwner, type RetryView, verdict } from "../journal/fold.ts";
import { formatDuration } from "../text/text.ts";
import { type OptionSpec, parseOptions } from "./args.ts";
import { readableJournalPath, WAIT_EXIT } from "./wait.ts";
import { stdoutSink, warnLine } from "../io/output.ts";

/** The flags `turnguard retry` accepts. */
export const RETRY_OPTIONS = {
  journal: { type: "string" },
} satisfies OptionSpec;

/** The exit codes of `turnguard retry`. */
export const RETRY_EXIT = {
  ok: 0,
  /** No retry waits, or the owner cannot be signalled from here. */
  noRetry: EXIT.failed,
  usage: EXIT.usage,
  noSession: WAIT_EXIT.noSession,
  /** The process that owned the retry is gone (or another process now has its pid). */
  ownerGone: 5,
} as const;

/** Sends a signal to a process; tests pass their own. */
export type Signaller = (pid: number, signal: NodeJS.Signals) => void;

/** A retry that waits, as the journal tells it. */
type Waiting = Extract<RetryView, { state: "waiting" }>;

/** What `turnguard retry` does: signal the owner, or refuse with a message and exit code. */
export type RetryAction =
  | { kind: "signal" }
  | { kind: "refuse"; message: string; exitCode: number };

function ownerGoneMessage(r: Waiting, target: string): string {
  return `retry: the process that owned retry ${r.attempt} of ${r.of} for ${target} ` +
    `(pid ${r.pid}) is gone; it will not run`;
}

/**
 * Decides whether the owner of a waiting retry may be signalled: only when it is the owner
 * still, or, where that cannot be verified, while the retry is not long overdue (a retry
 * overdue by more than OVERDUE_MS never started: its process most likely died). An owner
 * on another host or in another pid namespace cannot be signalled from here.
 */
export function retryAction(
  r: Waiting,
  owner: OwnerState,
  lateMs: number,
  target: string,
): RetryAction {
  const holder = retryOwner(owner, lateMs);
  if (holder === "gone") {
    return { kind: "refuse", message: ownerGoneMessage(r, target), exitCode: RETRY_EXIT.ownerGone };
  }
  if (holder === "elsewhere") {
    return {
      kind: "refuse",
      message: `retry: the process that owns retry ${r.attempt} of ${r.of} for ${target} ` +
        `(pid ${r.pid}) runs on another host or in another pid namespace; ` +
        "run turnguard retry there",
      exitCode: RETRY_EXIT.noRetry,
    };
  }
  if (holder === "likely_gone") {
    return {
      kind: "refuse",
      message:
        `retry: retry ${r.attempt} of ${r.of} for ${target} was due ${
          formatDuration(lateMs)
        } ago and never started; ` +
        `its process (pid ${r.pid}) is likely gone`,
      exitCode: RETRY_EXIT.ownerGone,
    };
  }
  return { kind: "signal" };
}

/** Runs `turnguard retry ARGS` and returns the exit code. */
export function retryCommand(
  argv: string[],
  signal: Signaller = (pid, sig) => void process.kill(pid, sig),
  now: () => number = Date.now,
  owner: (owner: Owner) => OwnerState = ownerState,
): number {
  const { values, positionals } = parseOptions("retry", argv, RETRY_OPTIONS, true);
  if (positionals.length !== 1) {
    throw new UsageError("retry: expected one NAME or SESSION (turnguard retry NAME|SESSION)");
  }
  const target = positionals[0];
  const path = readableJournalPath(values.journal);
  const read = readTail(path, { target, limit: 1 });
  for (const d of read.diagnostics) warnLine(`turnguard: ${d}`);
  const turn = latestTurn(foldRead(read), target);
  if (!turn) {
    throw new TurnguardError(
      `retry: no such session or name "${target}" in the journal ${path}`,
      RETRY_EXIT.noSession,
    );
  }
  const r = turn.retry;
  if (r?.state !== "waiting" || verdict(turn).kind !== "done") {
    const what = turn.running
      ? "its latest turn is running"
      : r?.state === "settled"
      ? `its retry is settled (${r.reason})`
      : "no retry was scheduled";
    throw new TurnguardError(
      `retry: no retry waits for ${target} (turn ${turn.turn}: ${what})`,
      RETRY_EXIT.noRetry,
    );
  }
  const action = retryAction(r, owner(r), now() - Date.parse(r.nextAt), target);
  if (action.kind === "refuse") throw new TurnguardError(action.message, action.exitCode);
  try {
    signal(r.pid, RUN_NOW_SIGNAL);
  } catch (err) {
    const code = errCode(err);
    if (code === "ESRCH") {
      throw new TurnguardError(ownerGoneMessage(r, target), RETRY_EXIT.ownerGone);
    }
    throw new TurnguardError(`retry: cannot signal pid ${r.pid} (${code})`, RETRY_EXIT.noRetry);
  }
  void stdoutSink.line(
    `${turn.name}: retry ${r.attempt} of ${r.of} runs now (signalled pid ${r.pid})`,
  );
  return RETRY_EXIT.ok;
}
