/**
 * `turnguard retry NAME|SESSION`: makes the retry that waits for that session's latest
 * turn run now, by signalling the turnguard process that owns it (its pid is in the
 * journal) with SIGUSR1.
 */
import { EXIT, TurnguardError, UsageError } from "../errors.ts";
import { journalPath, readJournal } from "../journal.ts";
import { errCode } from "../logfs.ts";
import { RUN_NOW_SIGNAL } from "../retry_waits.ts";
import { OVERDUE_MS } from "../turn_report.ts";
import { findSession, foldRecords, latestTurn, verdict } from "../turn_state.ts";
import { formatDuration } from "../text.ts";
import { envRecord, type OptionSpec, parseOptions } from "./args.ts";
import { WAIT_EXIT } from "./wait.ts";

/** The flags `turnguard retry` accepts. */
export const RETRY_OPTIONS = {
  journal: { type: "string" },
} satisfies OptionSpec;

/** Sends a signal to a process; tests pass their own. */
export type Signaller = (pid: number, signal: NodeJS.Signals) => void;

/** Runs `turnguard retry ARGS` and returns the exit code. */
export function retryCommand(
  argv: string[],
  signal: Signaller = (pid, sig) => void process.kill(pid, sig),
  now: () => number = Date.now,
): number {
  const { values, positionals } = parseOptions("retry", argv, RETRY_OPTIONS, true);
  if (positionals.length !== 1) {
    throw new UsageError("retry: expected one NAME or SESSION (turnguard retry NAME|SESSION)");
  }
  const target = positionals[0];
  const path = journalPath(values.journal, envRecord(), process.cwd());
  const read = readJournal(path);
  for (const d of read.diagnostics) process.stderr.write(`turnguard: ${d}\n`);
  const session = findSession(foldRecords(read.records), target);
  if (!session) {
    throw new TurnguardError(
      `retry: no such session or name "${target}" in the journal ${path}`,
      WAIT_EXIT.noSession,
    );
  }
  const turn = latestTurn(session);
  const r = turn.retry;
  if (r?.state !== "waiting" || verdict(turn).kind !== "done") {
    const what = turn.running
      ? "its latest turn is running"
      : r?.state === "settled"
      ? `its retry is settled (${r.reason})`
      : "no retry was scheduled";
    throw new TurnguardError(
      `retry: no retry waits for ${target} (turn ${turn.turn}: ${what})`,
      EXIT.failed,
    );
  }
  const late = now() - Date.parse(r.nextAt);
  if (late > OVERDUE_MS) {
    throw new TurnguardError(
      `retry: retry ${r.attempt} of ${r.of} for ${target} was due ${formatDuration(late)} ago ` +
        `and never started; its process (pid ${r.pid}) is gone`,
      EXIT.failed,
    );
  }
  try {
    signal(r.pid, RUN_NOW_SIGNAL);
  } catch (err) {
    const code = errCode(err);
    throw new TurnguardError(
      code === "ESRCH"
        ? `retry: the process that owns the retry (pid ${r.pid}) is gone`
        : `retry: cannot signal pid ${r.pid} (${code})`,
      EXIT.failed,
    );
  }
  process.stdout.write(
    `${turn.name}: retry ${r.attempt} of ${r.of} runs now (signalled pid ${r.pid})\n`,
  );
  return 0;
}
