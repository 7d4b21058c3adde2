/**
 * The journal writer: one write per record to a file opened for appending (regular-file
 * O_APPEND writes do not interleave), rotation by size under a lock.
 */
import {
  closeSync,
  fstatSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { errCode } from "../io/logfs.ts";
import { openPrivateAppend } from "../io/private_file.ts";
import { rotatedFiles } from "./files.ts";
import { formatRecord, type JournalRecord } from "./records.ts";

/** Rotate the journal once it reaches this size. */
export const ROTATE_BYTES = 8 * 1024 * 1024;
/** Rotated files kept besides the live one. */
export const ROTATE_KEEP = 3;
/** A rotation lock older than this was left by a process that died; it is broken. */
const STALE_LOCK_MS = 30_000;

/**
 * Opens the live journal file for appending (created 0600 when missing, its directory 0700
 * when `makeDir`); its descriptor. Never follows a symbolic link at the path and never
 * blocks: a FIFO or other non-regular file is a NotRegularFileError (lib/io/private_file.ts).
 */
export function openForAppend(path: string, makeDir = false): number {
  return openPrivateAppend(path, makeDir);
}

/** Options of a journal writer; tests rotate at small sizes. */
export interface JournalWriterOptions {
  path: string;
  rotateBytes?: number;
  keep?: number;
  now?: () => number;
}

/** Appends records to the journal, one write per record, rotating it by size. */
export class JournalWriter {
  readonly path: string;
  readonly #rotateBytes: number;
  readonly #keep: number;
  readonly #now: () => number;
  #dirReady = false;

  constructor(opts: JournalWriterOptions) {
    this.path = opts.path;
    this.#rotateBytes = opts.rotateBytes ?? ROTATE_BYTES;
    this.#keep = opts.keep ?? ROTATE_KEEP;
    this.#now = opts.now ?? Date.now;
  }

  /** Writes one record as one line with a single write; throws on a file-system error. */
  append(record: JournalRecord): void {
    const bytes = new TextEncoder().encode(formatRecord(record));
    const fd = openForAppend(this.path, !this.#dirReady);
    this.#dirReady = true;
    let size: number;
    try {
      const written = writeSync(fd, bytes);
      if (written !== bytes.length) {
        throw new Error(`short write to ${this.path} (${written} of ${bytes.length} bytes)`);
      }
      size = fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
    if (size >= this.#rotateBytes) this.#rotate();
  }

  /**
   * Renames the live file to the next numbered one and drops the oldest beyond `keep`.
   * Only the holder of the lock rotates, and only if the live file is still over the limit,
   * so concurrent writers rotate once; a writer whose record lands in a file just renamed
   * still lands before everything it writes next, in reading order.
   */
  #rotate(): void {
    const lock = this.path + ".lock";
    let fd: number;
    try {
      fd = openSync(lock, "wx");
    } catch (err) {
      if (errCode(err) !== "EEXIST") throw err;
      try {
        if (this.#now() - statSync(lock).mtimeMs < STALE_LOCK_MS) return;
        unlinkSync(lock);
        fd = openSync(lock, "wx");
      } catch {
        return;
      }
    }
    try {
      let size: number;
      try {
        size = statSync(this.path).size;
      } catch {
        return;
      }
      if (size < this.#rotateBytes) return;
      const rotated = rotatedFiles(this.path);
      const next = (rotated.at(-1)?.n ?? 0) + 1;
      renameSync(this.path, `${this.path}.${next}`);
      const all = [...rotated, { n: next, path: `${this.path}.${next}` }];
      for (const old of all.slice(0, Math.max(0, all.length - this.#keep))) {
        try {
          unlinkSync(old.path);
        } catch { /* already gone */ }
      }
    } finally {
      closeSync(fd);
      try {
        unlinkSync(lock);
      } catch { /* broken by another writer */ }
    }
  }
}
