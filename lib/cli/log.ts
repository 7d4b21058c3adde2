/**
 * `turnguard log [NAME|SESSION] [--limit N] [--json]`: the recent turns (of the sessions
 * with that id or name), one line each with status, category, duration and retry, for
 * people; one JSON row each with --json.
 */
import { TurnguardError, UsageError } from "../errors.ts";
import { readTail } from "../journal/tail.ts";
import { formatLog, logRow } from "../journal/report.ts";
import { foldRead, recentTurns } from "../journal/fold.ts";
import { type OptionSpec, parseOptions } from "./args.ts";
import { readableJournalPath, WAIT_EXIT } from "./wait.ts";
import { stdoutSink, warnLine, writeShown } from "../io/output.ts";

/** Turns listed when --limit is not given. */
export const DEFAULT_LOG_LIMIT = 20;

/** The flags `turnguard log` accepts. */
export const LOG_OPTIONS = {
  limit: { type: "string", short: "n" },
  json: { type: "boolean" },
  journal: { type: "string" },
} satisfies OptionSpec;

/** Runs `turnguard log ARGS` and returns the exit code. */
export function logCommand(argv: string[]): number {
  const { values, positionals } = parseOptions("log", argv, LOG_OPTIONS, true);
  if (positionals.length > 1) {
    throw new UsageError(`log: expected at most one NAME or SESSION, got ${positionals.length}`);
  }
  let limit = DEFAULT_LOG_LIMIT;
  if (values.limit !== undefined) {
    if (!/^[1-9]\d*$/.test(values.limit)) {
      throw new UsageError(`--limit: expected a positive whole number, got "${values.limit}"`);
    }
    limit = Number(values.limit);
  }
  const target = positionals[0];
  const path = readableJournalPath(values.journal);
  // Read from the journal's end: only the turns shown are parsed.
  const read = readTail(path, { target, limit });
  for (const d of read.diagnostics) warnLine(`turnguard: ${d}`);
  const turns = recentTurns(foldRead(read), limit, target);
  if (target !== undefined && turns.length === 0) {
    throw new TurnguardError(
      `log: no such session or name "${target}" in the journal ${path}`,
      WAIT_EXIT.noSession,
    );
  }
  if (values.json) {
    for (const t of turns) void stdoutSink.json(logRow(t));
  } else {
    writeShown(formatLog(turns, Date.now()));
  }
  return 0;
}
