/**
 * Scan: after the turn, reads only the bytes appended to the agent's logs since the
 * snapshot — from the snapshot offset, capped to the last 256 KiB — in every file that
 * grew, appeared, or was rotated/truncated, newest first, no cap on their number.
 */
import { basename, dirname, join } from "node:path";
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
}

/** The scan's answer: appended chunks newest first, and what could not be read. */
export interface ScanResult {
  chunks: AppendedChunk[];
  diagnostics: string[];
}

/** Scans the logs the snapshot covered; `spawnedAt` is the agent's spawn time (ms). */
export function scanAppended(
  snapshot: Snapshot,
  spawnedAt: number,
  fs: LogFs = nodeLogFs,
): ScanResult {
  const diagnostics: string[] = [];
  const chunks: AppendedChunk[] = [];
  const now = listLogs(snapshot.patterns, fs, diagnostics, true);
  const present = new Set(now);
  /** Files to read: current ones, plus snapshot files that were renamed away. */
  const targets: { path: string; before: FileStat | undefined; moved: boolean }[] = now.map(
    (path) => ({ path, before: snapshot.files.get(path), moved: false }),
  );
  for (const [path, before] of snapshot.files) {
    if (present.has(path) && sameFile(path, before, fs)) continue;
    const moved = findMoved(path, before, fs);
    if (!moved) {
      if (!present.has(path)) diagnostics.push(`log ${path} vanished during the turn`);
      continue;
    }
    // Renamed to a name the patterns also match: read it from the old offset, not from 0.
    const known = targets.find((t) => t.path === moved);
    if (known && known.before === undefined) known.before = before, known.moved = true;
    else if (!known) targets.push({ path: moved, before, moved: true });
  }
  for (const { path, before, moved } of targets) {
    let stat;
    try {
      stat = fs.stat(path);
    } catch (err) {
      const code = errCode(err);
      diagnostics.push(
        code === "ENOENT"
          ? `log ${path} vanished during the scan`
          : `log ${path} cannot be read (${code})`,
      );
      continue;
    }
    let offset: number;
    let reason: AppendedChunk["reason"];
    if (!before) {
      offset = 0;
      reason = "new";
    } else if (before.dev !== stat.dev || before.ino !== stat.ino || stat.size < before.size) {
      offset = 0;
      reason = "rotated";
    } else if (stat.size > before.size) {
      offset = before.size;
      reason = moved ? "moved" : "grew";
    } else continue;
    if (stat.mtimeMs < spawnedAt - MTIME_SLACK_MS) continue;
    if (stat.size <= offset) continue;
    const start = Math.max(offset, stat.size - SCAN_TAIL_BYTES);
    let bytes: Uint8Array;
    try {
      bytes = fs.read(path, start, stat.size);
    } catch (err) {
      diagnostics.push(`log ${path} cannot be read (${errCode(err)})`);
      continue;
    }
    if (start > offset) {
      diagnostics.push(
        `log ${path}: read only the last ${SCAN_TAIL_BYTES} of ${
          stat.size - offset
        } appended bytes`,
      );
    }
    chunks.push({
      path,
      offset: start,
      text: new TextDecoder("utf-8", { fatal: false }).decode(bytes),
      mtimeMs: stat.mtimeMs,
      reason,
    });
  }
  chunks.sort((a, b) => b.mtimeMs - a.mtimeMs);
  return { chunks, diagnostics };
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
 * of its directory with the same device and inode, or null.
 */
function findMoved(path: string, before: FileStat, fs: LogFs): string | null {
  let names: string[];
  try {
    names = fs.readDir(dirname(path));
  } catch {
    return null;
  }
  for (const name of names) {
    if (name === basename(path)) continue;
    try {
      const s = fs.stat(join(dirname(path), name));
      if (s.dev === before.dev && s.ino === before.ino) return join(dirname(path), name);
    } catch {
      // gone again, or unreadable: not the file we look for
    }
  }
  return null;
}
