/**
 * `--outcome-file PATH`: Outcomes appended as JSON lines, one write per record, so several
 * turnguard processes may share a file. Opened before the agent starts, so a bad path is a
 * usage error while nothing has run yet. The file is created 0600, opened without
 * following a symbolic link and without blocking; a FIFO, directory or other non-regular
 * file at the path is refused with one line on stderr and the turn goes on without it.
 * Records are redacted (lib/text/redact.ts).
 */
import { closeSync, writeSync } from "node:fs";
import { UsageError } from "../errors.ts";
import { errCode } from "../io/logfs.ts";
import type { Outcome } from "../core/outcome.ts";
import { NotRegularFileError, openPrivateAppend } from "../io/private_file.ts";
import { redactedJson } from "../text/redact.ts";

/** An open outcome file. `append` never throws: it returns the error text, if any. */
export interface OutcomeFile {
  append(outcome: Outcome): string | null;
  close(): void;
}

/**
 * Opens PATH for appending. A path that cannot be opened is a UsageError (exit 2); one
 * that is not a regular file is said through `warn`, and null is returned.
 */
export function openOutcomeFile(path: string, warn: (line: string) => void): OutcomeFile | null {
  let fd: number;
  try {
    fd = openPrivateAppend(path);
  } catch (err) {
    if (err instanceof NotRegularFileError) {
      warn(`turnguard: --outcome-file ${err.message}; no Outcome is written to it`);
      return null;
    }
    throw new UsageError(`--outcome-file ${path}: cannot open for appending (${errCode(err)})`);
  }
  return {
    append(outcome) {
      try {
        // One write per record, so records of concurrent writers do not interleave.
        const bytes = new TextEncoder().encode(redactedJson(outcome) + "\n");
        const written = writeSync(fd, bytes);
        return written === bytes.length
          ? null
          : `--outcome-file ${path}: short write (${written} of ${bytes.length} bytes)`;
      } catch (err) {
        return `--outcome-file ${path}: cannot write (${errCode(err)})`;
      }
    },
    close: () => closeSync(fd),
  };
}
