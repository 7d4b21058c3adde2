/**
 * The file-system edge of the log and session-record scanner: the few calls snapshot and
 * scan need, behind a small interface so tests can fake a vanishing or unreadable file.
 * Nothing here follows a symbolic link or opens a file on the calling thread: listing and
 * `lstat` never open a file an agent could hold, and reading goes through the one bounded
 * reader (lib/io/bounded_read.ts).
 */
import { lstatSync } from "node:fs";
import { lstat } from "node:fs/promises";
import {
  type BoundedRead,
  errCode,
  readBounded,
  type ReadBudget,
  type ReadRange,
} from "./bounded_read.ts";
import { type ReadDir, realReadDir } from "./glob.ts";

/** A log file's identity and size at one moment. */
export interface FileStat {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** What snapshot and scan need from the file system. */
export interface LogFs {
  /** Lists a directory (at most MAX_DIR_ENTRIES names). */
  readDir: ReadDir;
  /** `lstat` of a path (a symbolic link is described, not followed); never opens it. */
  stat(path: string): FileStat;
  /** The same, on the runtime's thread pool. */
  statAsync(path: string): Promise<FileStat>;
  /** Reads the bytes `range` picks of a regular file, within the turn's budget. */
  read(path: string, range: ReadRange, budget: ReadBudget): Promise<BoundedRead>;
}

function fileStat(s: { dev: number; ino: number; size: number; mtimeMs: number }): FileStat {
  return { dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
}

/** The real file system. */
export const nodeLogFs: LogFs = {
  readDir: realReadDir,
  stat: (path) => fileStat(lstatSync(path)),
  statAsync: async (path) => fileStat(await lstat(path)),
  read: readBounded,
};

export { errCode };
