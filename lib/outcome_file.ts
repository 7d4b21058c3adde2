/**
 * `--outcome-file PATH`: Outcomes appended as JSON lines, one write per record, so several
 * turnguard processes may share a file. Opened before the agent starts, so a bad path is a
 * usage error while nothing has run yet.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { UsageError } from "./errors.ts";
import { errCode } from "./logfs.ts";
import type { Outcome } from "./outcome.ts";

/** An open outcome file. `append` never throws: it returns the error text, if any. */
export interface OutcomeFile {
  append(outcome: Outcome): string | null;
  close(): void;
}

/** Opens PATH for appending; a path that cannot be opened is a UsageError (exit 2). */
export function openOutcomeFile(path: string): OutcomeFile {
  let fd: number;
  try {
    fd = openSync(path, "a");
  } catch (err) {
    throw new UsageError(`--outcome-file ${path}: cannot open for appending (${errCode(err)})`);
  }
  return {
    append(outcome) {
      try {
        writeSync(fd, JSON.stringify(outcome) + "\n");
        return null;
      } catch (err) {
        return `--outcome-file ${path}: cannot write (${errCode(err)})`;
      }
    },
    close: () => closeSync(fd),
  };
}
