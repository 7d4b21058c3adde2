/**
 * Snapshot: the identity (device + inode) and size of every log file an agent profile
 * names, taken just before the agent runs, so the scan reads only what the turn appended.
 */
import { glob, MAX_DIR_ENTRIES, TOO_MANY_ENTRIES } from "../io/glob.ts";
import { errCode, type FileStat, type LogFs, nodeLogFs } from "../io/logfs.ts";

/** Log files as they were before the turn, with the problems met while looking. */
export interface Snapshot {
  /** Absolute patterns (variables expanded) this snapshot covers. */
  patterns: string[];
  files: Map<string, FileStat>;
  /** Wall-clock time the snapshot was taken (ms since epoch). */
  takenAt: number;
  diagnostics: string[];
}

/**
 * Most files one snapshot or scan considers. A pattern can match any number of files an
 * agent creates; each costs an `lstat` when the turn starts and ends. Past this number the
 * last ones in name order are kept (log and record names carry dates or counters, so
 * these are the newest) and the rest reported.
 */
export const MAX_LISTED_FILES = 4096;

/**
 * Lists the files matching `patterns`, describing unlistable directories as diagnostics.
 * A missing directory is reported only when `reportMissing` (at scan time: before the
 * turn it is normal, since the agent creates it on its first run).
 */
export function listLogs(
  patterns: readonly string[],
  fs: LogFs,
  diagnostics: string[],
  reportMissing: boolean,
): string[] {
  const seen = new Set<string>();
  for (const pattern of patterns) {
    const { paths, problems } = glob(pattern, fs.readDir);
    for (const p of problems) {
      if (p.code === "ENOENT" && !reportMissing) continue;
      diagnostics.push(
        p.code === "ENOENT"
          ? `log directory ${p.path} does not exist (yet)`
          : p.code === TOO_MANY_ENTRIES
          ? `log directory ${p.path} has more than ${MAX_DIR_ENTRIES} entries; only the first ${MAX_DIR_ENTRIES} were listed`
          : `log directory ${p.path} cannot be read (${p.code})`,
      );
    }
    for (const path of paths) seen.add(path);
  }
  const all = [...seen];
  if (all.length <= MAX_LISTED_FILES) return all;
  diagnostics.push(
    `${all.length} files match ${patterns.join(", ")}; only the last ${MAX_LISTED_FILES} ` +
      `by name were considered`,
  );
  return all.sort().slice(-MAX_LISTED_FILES);
}

/** Takes the snapshot. Never throws: what cannot be seen becomes a diagnostic. */
export function takeSnapshot(
  patterns: readonly string[],
  now: number,
  fs: LogFs = nodeLogFs,
): Snapshot {
  const diagnostics: string[] = [];
  const files = new Map<string, FileStat>();
  for (const path of listLogs(patterns, fs, diagnostics, false)) {
    try {
      files.set(path, fs.stat(path));
    } catch (err) {
      const code = errCode(err);
      if (code !== "ENOENT") diagnostics.push(`log ${path} cannot be read (${code})`);
    }
  }
  return { patterns: [...patterns], files, takenAt: now, diagnostics };
}
