/**
 * Where the journal is: its path from flag, environment and XDG defaults, and its files in
 * reading order (rotated ones oldest first, then the live one).
 */
import { readdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { absoluteDir, homeDir } from "../io/env_dirs.ts";
import { UsageError } from "../errors.ts";

/**
 * The journal's path: `--journal`, else `$TURNGUARD_JOURNAL`, else
 * `$XDG_STATE_HOME/turnguard/journal.jsonl` (`$HOME/.local/state` when unset or relative;
 * a relative `HOME` is ignored for the account's home directory).
 */
export function journalPath(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  cwd: string,
): string {
  const given = flag ?? env.TURNGUARD_JOURNAL;
  if (given !== undefined && given !== "") return resolve(cwd, given);
  const home = homeDir(env);
  const state = absoluteDir(env, "XDG_STATE_HOME") ??
    (home ? join(home, ".local", "state") : null);
  if (state === null) {
    throw new UsageError(
      "journal: no absolute HOME or XDG_STATE_HOME to keep it under; give --journal PATH",
    );
  }
  return join(state, "turnguard", "journal.jsonl");
}

/** The rotated files of a journal, oldest (lowest number) first. */
export function rotatedFiles(path: string): { n: number; path: string }[] {
  const base = basename(path);
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return [];
  }
  const out: { n: number; path: string }[] = [];
  for (const name of names) {
    if (!name.startsWith(base + ".")) continue;
    const suffix = name.slice(base.length + 1);
    if (/^[1-9]\d*$/.test(suffix)) out.push({ n: Number(suffix), path: join(dirname(path), name) });
  }
  return out.sort((a, b) => a.n - b.n);
}

/** The journal's files in reading order: rotated ones oldest first, then the live one. */
export function journalFiles(path: string): string[] {
  return [...rotatedFiles(path).map((f) => f.path), path];
}
