/**
 * Scan: after the turn, reads only the bytes appended to the agent's logs since the
 * snapshot — from the snapshot offset, capped to the last 256 KiB — in every file that
 * grew, appeared, or was rotated/truncated, newest first, within the turn's read budget
 * (lib/io/bounded_read.ts: files, bytes and milliseconds).
 */
import { basename, dirname, join } from "node:path";
import { ReadBudget } from "../io/bounded_read.ts";
import { errCode, type FileStat, type LogFs, nodeLogFs } from "../io/logfs.ts";
import { listLogs, type Snapshot } from "./snapshot.ts";

/** Most bytes read from one file's appended region (its last bytes are kept). */
export const SCAN_TAIL_BYTES = 256 * 1024;

/** Files last modified more than this long before spawn are not this turn's. */
export const MTIME_SLACK_MS = 1000;

/** The bytes one log file gained during the turn, decoded. */
export interface AppendedChunk {
  path: string;
  /** File offset of the first byte of `text`. */
  offset: number;
  text: string;
  mtimeMs: number;
  /**
   * Why it is a candidate: grew, new, rotated (identity changed or shrank), or moved (the
   * snapshot's file was renamed during the turn; its new name is `path`).
   */
  reason: "grew" | "new" | "rotated" | "moved";
  /** For a moved file: the snapshot's name of it (where a follower's offset is kept). */
  movedFrom?: string;
  /** The read file's identity and size (its `fstat`): where a follower resumes. */
  file?: FileStat;
}

/** The scan's answer: appended chunks newest first, and what could not be read. */
export interface ScanResult {
  chunks: AppendedChunk[];
  diagnostics: string[];
  /**
   * The snapshot's files that are gone and were not found renamed in their directory: a
   * follower forgets them, so the search is not made again on every look.
   */
  vanished?: string[];
}

/**
 * Most directory entries one scan `lstat`s looking for renamed logs (synchronous calls on
 * the relay's thread): an agent that deletes its logs in a directory of tens of thousands of
 * entries must not buy a stat of each of them per deleted log and per look.
 */
export const MAX_MOVED_STATS = 1024;

/** Where a file's turn bytes start, and why it is read; null: nothing new in it. */
function appended(
  before: FileStat | undefined,
  now: FileStat,
  moved: boolean,
): { offset: number; reason: AppendedChunk["reason"] } | null {
  if (!before) return { offset: 0, reason: "new" };
  if (before.dev !== now.dev || before.ino !== now.ino || now.size < before.size) {
    return { offset: 0, reason: "rotated" };
  }
  if (now.size > before.size) return { offset: before.size, reason: moved ? "moved" : "grew" };
  return null;
}

/**
 * Scans the logs the snapshot covered; `spawnedAt` is the agent's spawn time (ms). Files
 * are read newest first through the bounded reader (lib/io/bounded_read.ts) within
 * `budget` (the turn's): what does not fit is one diagnostic, never an error.
 */
export async function scanAppended(
  snapshot: Snapshot,
  spawnedAt: number,
  budget: ReadBudget = new ReadBudget(),
  fs: LogFs = nodeLogFs,
): Promise<ScanResult> {
  const diagnostics: string[] = [];
  const chunks: AppendedChunk[] = [];
  const now = listLogs(snapshot.patterns, fs, diagnostics, true);
  const present = new Set(now);
  /** Files to read: current ones, plus snapshot files that were renamed away. */
  const targets: {
    path: string;
    before: FileStat | undefined;
    moved: boolean;
    movedFrom?: string;
  }[] = now.map((path) => ({ path, before: snapshot.files.get(path), moved: false }));
  const vanished: string[] = [];
  const search = new MovedSearch(fs, diagnostics);
  for (const [path, before] of snapshot.files) {
    if (sameFile(path, before, fs)) {
      // Still there under a name the patterns do not match (a follower keeps a renamed log).
      if (!present.has(path)) targets.push({ path, before, moved: true });
      continue;
    }
    const moved = search.find(path, before);
    if (!moved) {
      if (!present.has(path)) {
        diagnostics.push(`log ${path} vanished during the turn`);
        vanished.push(path);
      }
      continue;
    }
    // Renamed to a name the patterns also match: read it from the old offset, not from 0.
    const known = targets.find((t) => t.path === moved);
    if (known && known.before === undefined) {
      known.before = before, known.moved = true, known.movedFrom = path;
    } else if (!known) targets.push({ path: moved, before, moved: true, movedFrom: path });
  }
  const stats = await Promise.all(targets.map(async (t) => {
    try {
      return { ...t, stat: await fs.statAsync(t.path) };
    } catch (err) {
      const code = errCode(err);
      diagnostics.push(
        code === "ENOENT"
          ? `log ${t.path} vanished during the scan`
          : `log ${t.path} cannot be read (${code})`,
      );
      return null;
    }
  }));
  // The files the turn wrote, newest first: the budget goes to the newest.
  const candidates = stats.filter((t) => t !== null).filter((t) => {
    const from = appended(t.before, t.stat, t.moved);
    return from !== null && t.stat.mtimeMs >= spawnedAt - MTIME_SLACK_MS &&
      t.stat.size > from.offset;
  }).sort((a, b) => b.stat.mtimeMs - a.stat.mtimeMs);
  for (const [i, { path, before, moved, movedFrom }] of candidates.entries()) {
    let picked: { offset: number; reason: AppendedChunk["reason"] } | null = null;
    // The range is taken from the opened file's own fstat: the bytes of the file read.
    const read = await fs.read(path, (stat) => {
      picked = appended(before, stat, moved);
      if (picked === null || stat.size <= picked.offset) return null;
      return { start: Math.max(picked.offset, stat.size - SCAN_TAIL_BYTES), end: stat.size };
    }, budget);
    if (!read.ok) {
      if (read.spent) {
        diagnostics.push(
          `${candidates.length - i} log file(s) were not read, ${path} the newest of them: ` +
            `${budget.refusal()} was used up`,
        );
        break;
      }
      diagnostics.push(`log ${read.why}`);
      continue;
    }
    const got = picked as { offset: number; reason: AppendedChunk["reason"] } | null;
    if (got === null || read.stat.size <= got.offset) continue;
    const start = read.start;
    if (start > got.offset && !read.short) {
      diagnostics.push(
        `log ${path}: read only the last ${SCAN_TAIL_BYTES} of ${
          read.stat.size - got.offset
        } appended bytes`,
      );
    }
    if (read.short) diagnostics.push(`log ${read.short}`);
    chunks.push({
      path,
      offset: start,
      text: new TextDecoder("utf-8", { fatal: false }).decode(read.bytes),
      mtimeMs: read.stat.mtimeMs,
      reason: got.reason,
      ...(got.reason === "moved" && movedFrom !== undefined ? { movedFrom } : {}),
      file: read.stat,
    });
  }
  chunks.sort((a, b) => b.mtimeMs - a.mtimeMs);
  return { chunks, diagnostics, vanished };
}

/** Whether `path` still is the file the snapshot saw (same device and inode). */
function sameFile(path: string, before: FileStat, fs: LogFs): boolean {
  try {
    const s = fs.stat(path);
    return s.dev === before.dev && s.ino === before.ino;
  } catch {
    return false;
  }
}

/**
 * Where a log file went when it was renamed during the turn (logrotate-style): the entry
 * of its directory with the same device and inode. Each directory is listed once per scan,
 * and at most MAX_MOVED_STATS entries are stat'ed in all (past that: a diagnostic, and the
 * file counts as gone).
 */
class MovedSearch {
  readonly #fs: LogFs;
  readonly #diagnostics: string[];
  readonly #listed = new Map<string, string[]>();
  #stats = 0;
  #told = false;

  constructor(fs: LogFs, diagnostics: string[]) {
    this.#fs = fs;
    this.#diagnostics = diagnostics;
  }

  find(path: string, before: FileStat): string | null {
    const dir = dirname(path);
    let names = this.#listed.get(dir);
    if (!names) {
      try {
        names = this.#fs.readDir(dir);
      } catch {
        names = [];
      }
      this.#listed.set(dir, names);
    }
    // Rotated names keep the log's own name in them (agent.log.1, agent-2026-12-01.log): first.
    const stem = basename(path).split(".")[0];
    const likely = names.filter((n) => n.startsWith(stem));
    for (const name of [...likely, ...names.filter((n) => !n.startsWith(stem))]) {
      if (name === basename(path)) continue;
      if (this.#stats >= MAX_MOVED_STATS) {
        if (!this.#told) {
          this.#diagnostics.push(
            `log directory ${dir}: stopped looking for renamed logs after ${MAX_MOVED_STATS} entries`,
          );
          this.#told = true;
        }
        return null;
      }
      this.#stats++;
      try {
        const s = this.#fs.stat(join(dir, name));
        if (s.dev === before.dev && s.ino === before.ino) return join(dir, name);
      } catch {
        // gone again, or unreadable: not the file we look for
      }
    }
    return null;
  }
}
