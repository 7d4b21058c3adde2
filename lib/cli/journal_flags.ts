/**
 * The journal and retry flags `turnguard run` and `turnguard proxy` share: `--journal`,
 * `--name`, `--retries`, `--retry-max-wait`, turned into a recorder and its retry waits.
 */
import { lstatSync, type Stats } from "node:fs";
import { UsageError } from "../errors.ts";
import { journalPath } from "../journal/files.ts";
import { fileKind, foreignOwner } from "../io/private_file.ts";
import { JournalWriter } from "../journal/writer.ts";
import { DEFAULT_RETRY_MAX_WAIT_S, type RetryPolicy } from "../retry/policy.ts";
import { RetryWaits } from "../retry/waits.ts";
import { TurnRecorder } from "../retry/turn_recorder.ts";
import { type OptionSpec, type OptionValues, parseSeconds } from "./args.ts";

/** The flags, for a subcommand's options table. */
export const JOURNAL_OPTIONS = {
  journal: { type: "string" },
  "no-journal": { type: "boolean" },
  name: { type: "string" },
  retries: { type: "string" },
  "retry-max-wait": { type: "string" },
} satisfies OptionSpec;

/**
 * `--verbose`, which the modes declare themselves; turnJournaling reads it to tell whether
 * a journal that cannot be written is worth a line on stderr.
 */
export const VERBOSE_OPTION = {
  verbose: { type: "boolean", short: "v" },
} satisfies OptionSpec;

/** The parsed values turnJournaling reads: JOURNAL_OPTIONS and VERBOSE_OPTION. */
export type JournalFlagValues = OptionValues<typeof JOURNAL_OPTIONS & typeof VERBOSE_OPTION>;

/**
 * Whether a journal that cannot be written is said on stderr: only when it was asked for
 * (`--journal`, `$TURNGUARD_JOURNAL`) or with `--verbose`. The default journal stays
 * silent, so that turnguard adds nothing to the agent's stderr on a read-only home.
 */
export function journalWarns(
  values: Pick<JournalFlagValues, "journal" | "verbose">,
  env: Record<string, string | undefined>,
): boolean {
  return values.verbose === true || values.journal !== undefined ||
    (env.TURNGUARD_JOURNAL ?? "") !== "";
}

/** The most retries `--retries` accepts. */
export const MAX_RETRIES = 100;

/** Parses `--retries N` and `--retry-max-wait S`. */
export function parseRetryPolicy(values: JournalFlagValues): RetryPolicy {
  const raw = values.retries;
  let retries = 0;
  if (raw !== undefined) {
    if (!/^\d+$/.test(raw) || Number(raw) > MAX_RETRIES) {
      throw new UsageError(
        `--retries: expected a whole number from 0 to ${MAX_RETRIES}, got "${raw}"`,
      );
    }
    retries = Number(raw);
  }
  const maxWait = parseSeconds("--retry-max-wait", values["retry-max-wait"]) ??
    DEFAULT_RETRY_MAX_WAIT_S;
  return { retries, maxWaitMs: Math.round(maxWait * 1000) };
}

/** What a mode needs to journal its turns and carry out retries. */
export interface TurnJournaling {
  recorder: TurnRecorder;
  waits: RetryWaits;
  /** The journal's path; null when turns are not journaled. */
  path: string | null;
}

/**
 * The journal's path, or null when the turns are not journaled: `--no-journal`, config
 * `journal = false`, no place to keep it, or something other than a regular file at the
 * path (a FIFO would block the turn, a symbolic link may point anywhere). The last two are
 * said on stderr, once, before the agent starts.
 */
export function journalTarget(
  values: JournalFlagValues,
  env: Record<string, string | undefined>,
  cwd: string,
  configJournal: boolean,
  warn: (line: string) => void,
): string | null {
  if (values["no-journal"] === true) {
    if (values.journal !== undefined) {
      throw new UsageError("--journal and --no-journal exclude each other");
    }
    return null;
  }
  if (!configJournal && values.journal === undefined) return null;
  let path: string;
  try {
    path = journalPath(values.journal, env, cwd);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    warn(`turnguard: ${err.message}; turns are not journaled`);
    return null;
  }
  const st = lstatOrNull(path);
  if (st && !st.isFile()) {
    warn(
      `turnguard: journal ${path} is ${fileKind(st)}, not a regular file; turns are not journaled`,
    );
    return null;
  }
  const owner = st && foreignOwner(st);
  if (owner) {
    warn(`turnguard: journal ${path} is ${owner}, not by this user; turns are not journaled`);
    return null;
  }
  return path;
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * Builds the recorder from the flags; `agent` names the session when `--name` is not given.
 * `configJournal` is the config's `journal` setting (false: off unless `--journal` is given).
 */
export function turnJournaling(
  values: JournalFlagValues,
  env: Record<string, string | undefined>,
  cwd: string,
  agent: string,
  warn: (line: string) => void,
  configJournal = true,
): TurnJournaling {
  if (values.name !== undefined && values.name.trim() === "") {
    throw new UsageError("--name: expected a non-empty name");
  }
  const policy = parseRetryPolicy(values);
  const path = journalTarget(values, env, cwd, configJournal, warn);
  const recorder = new TurnRecorder({
    journal: path === null ? null : new JournalWriter({ path }),
    name: values.name ?? agent,
    policy,
    onJournalError: journalWarns(values, env)
      ? (message) => warn(`turnguard: ${message}`)
      : undefined,
  });
  return { recorder, waits: new RetryWaits(), path };
}
