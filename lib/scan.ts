/**
 * Scan: after the turn, reads only the bytes appended to the agent's logs since the
 * snapshot — from the snapshot offset, capped to the last 256 KiB — in every file that
 * grew, appeared, or was rotated/truncated, newest first, no cap on their number.
 */
import { errCode, type LogFs, nodeLogFs } from "./logfs.ts";
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
  /** Why it is a candidate: grew, new, or rotated (identity changed or shrank). */
  reason: "grew" | "new" | "rotated";
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
  const now = listLogs(snapshot.patterns, fs, []);
  const present = new Set(now);
  for (const path of snapshot.files.keys()) {
    if (!present.has(path)) diagnostics.push(`log ${path} vanished during the turn`);
  }
  for (const path of now) {
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
    const before = snapshot.files.get(path);
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
      reason = "grew";
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
