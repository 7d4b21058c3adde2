/**
 * The journal reader: follows the journal's files forward, across rotations, each record
 * once and in journal order, and skips torn or corrupt lines with a diagnostic.
 */
import { closeSync, fstatSync, readSync, statSync } from "node:fs";
import { errCode } from "../io/logfs.ts";
import { journalFiles } from "./files.ts";
import { type JournalRecord, parseLineRecovering, readHead, type RecordHead } from "./records.ts";
import { openRegularForRead } from "../io/private_file.ts";

/** A record cut short that still names its turn, and where it was among the records read. */
export interface TornRecord {
  /** The index in `records` it came before. */
  before: number;
  head: RecordHead;
}

/** Records read, in journal order, with the torn ones that still name their turn. */
export interface RecordsRead {
  records: JournalRecord[];
  torn: TornRecord[];
}

/** What one read of the journal brought. */
export interface JournalRead extends RecordsRead {
  /** Skipped lines, named by file and line. */
  diagnostics: string[];
  /** The files changed under the reader (truncated, replaced): `records` is everything. */
  reset: boolean;
}

/** Where a reader stands in one journal file. */
export interface FileCursor {
  ino: number;
  offset: number;
  /** Bytes after the last newline: a write in progress, or a torn line. */
  partial: Uint8Array;
  /** Lines read (the line number of the last one); null when reading began past the start. */
  line: number | null;
  path: string;
  /** The file's first bytes: a file that reuses a deleted file's inode number differs here. */
  head: Uint8Array;
  /**
   * Set while the bytes of a line longer than MAX_LINE_BYTES pass: they are dropped up to
   * its newline (the number is the line's file offset).
   */
  skipping?: number;
}

/**
 * Longest journal line read (turnguard's own records are a few KiB; a reply's text at most
 * 64 KiB): a longer line is skipped with a diagnostic, and never held whole.
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** Buffers `appendTo` made: their room past a view may be written (each has one user). */
const growable = new WeakSet<ArrayBufferLike>();

/**
 * `partial` followed by `more`, in amortized time linear in the bytes added: the buffer
 * grows by doubling and is written in place while it has room.
 */
export function appendTo(partial: Uint8Array, more: Uint8Array): Uint8Array {
  if (more.length === 0) return partial;
  const need = partial.length + more.length;
  const buf = partial.buffer;
  if (partial.byteOffset === 0 && growable.has(buf) && buf.byteLength >= need) {
    const out = new Uint8Array(buf, 0, need);
    out.set(more, partial.length);
    return out;
  }
  const grown = new Uint8Array(Math.max(need, partial.length * 2, 4096));
  growable.add(grown.buffer);
  grown.set(partial);
  grown.set(more, partial.length);
  return grown.subarray(0, need);
}

/** Where a skipped line is: `PATH:LINE`, or `PATH (byte N)` when its line number is unknown. */
export function lineName(path: string, line: number | null, byte: number): string {
  return line === null ? `${path} (byte ${byte})` : `${path}:${line}`;
}

/** A journal file as one listing saw it. */
export interface Listed {
  path: string;
  ino: number;
}

/** How a pass over the files ended when it could not be kept. */
type PassFailure =
  /** A rotation happened during the pass: it is done again from the cursors before it. */
  | "moved"
  /** A file was truncated or replaced in place: everything is read again. */
  | "replaced";

const CHUNK = 1 << 20;
/** Bytes of a file's start kept to recognize it. */
export const HEAD_BYTES = 256;
/** Passes tried in one `read()` while rotations keep racing it; then it returns nothing new. */
const MAX_PASSES = 100;

/** The journal's files in reading order, with their inodes; files gone meanwhile are left out. */
export function listFiles(path: string): Listed[] {
  const out: Listed[] = [];
  for (const file of journalFiles(path)) {
    try {
      out.push({ path: file, ino: statSync(file).ino });
    } catch { /* removed since listed: a later listing will differ */ }
  }
  return out;
}

export function sameListing(a: readonly Listed[], b: readonly Listed[]): boolean {
  return a.length === b.length && a.every((f, i) => f.path === b[i].path && f.ino === b[i].ino);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Reads the journal incrementally: each `read()` returns the records appended since the
 * previous one, across rotations, each record once and in journal order. A trailing line
 * without its newline is held back until it is complete.
 *
 * Files are known by inode, so a file renamed by a rotation is read on from where it was
 * left. A pass lists the files, reads them, and lists them again: when a rotation happened
 * in between, the pass is dropped and done again from the cursors before it, so the tail
 * of the file that was live is never read after the records of the new live file.
 */
export class JournalReader {
  readonly path: string;
  #cursors = new Map<number, FileCursor>();

  /** A reader from the journal's start, or from where `cursors` stand (see tail.ts). */
  constructor(path: string, cursors: readonly FileCursor[] = []) {
    this.path = path;
    for (const c of cursors) this.#cursors.set(c.ino, { ...c });
  }

  /**
   * The heads of the live file's last line that has no newline yet: a write in progress —
   * or, once its writer is known to be gone, a record cut short.
   */
  heldHeads(): RecordHead[] {
    const live = [...this.#cursors.values()].find((c) => c.path === this.path);
    if (!live || live.partial.length === 0) return [];
    const head = readHead(new TextDecoder().decode(live.partial));
    return head?.event ? [head] : [];
  }

  /**
   * Lines cut short at the end of a rotated file: no write will complete them, so they are
   * torn. (The live file's trailing partial line is a write in progress, held back.)
   */
  tornTails(): string[] {
    return [...this.#cursors.values()]
      .filter((c) => c.partial.length > 0 && c.path !== this.path)
      .map((c) =>
        `journal ${
          lineName(c.path, c.line === null ? null : c.line + 1, c.offset - c.partial.length)
        }: skipped a torn last line`
      );
  }

  /** Reads what was appended since the last call. */
  read(): JournalRead {
    let reset = false;
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const before = new Map([...this.#cursors].map(([ino, c]) => [ino, { ...c }]));
      const result = this.#pass();
      if (result === "moved") {
        this.#cursors = before;
      } else if (result === "replaced") {
        this.#cursors.clear();
        reset = true;
      } else {
        return { ...result, reset };
      }
    }
    // Rotations kept racing every pass: nothing new this time, the cursors stand as they were.
    return { records: [], torn: [], diagnostics: [], reset };
  }

  /** One pass over the files; a failure when it cannot be kept. */
  #pass(): Omit<JournalRead, "reset"> | PassFailure {
    const read: RecordsRead = { records: [], torn: [] };
    const diagnostics: string[] = [];
    const listed = listFiles(this.path);
    for (const { path, ino } of listed) {
      let fd: number;
      try {
        fd = openRegularForRead(path);
      } catch (err) {
        if (errCode(err) === "ENOENT") return "moved";
        diagnostics.push(`journal ${path}: cannot read (${errCode(err)})`);
        continue;
      }
      try {
        const st = fstatSync(fd);
        if (st.ino !== ino) return "moved";
        let cursor = this.#cursors.get(ino);
        if (cursor && !this.#sameFile(fd, st.size, cursor)) {
          // Same name, other content: truncated or rewritten in place. Another name: a
          // deleted file's inode number was reused by a new file, which is read from its start.
          if (cursor.path === path) return "replaced";
          cursor = undefined;
        }
        if (!cursor) {
          cursor = {
            ino,
            offset: 0,
            partial: new Uint8Array(0),
            line: 0,
            path,
            head: new Uint8Array(0),
          };
          this.#cursors.set(ino, cursor);
        }
        cursor.path = path;
        while (cursor.offset < st.size) {
          const buf = new Uint8Array(Math.min(CHUNK, st.size - cursor.offset));
          const n = readSync(fd, buf, 0, buf.length, cursor.offset);
          if (n === 0) break;
          if (cursor.offset === 0) cursor.head = buf.slice(0, Math.min(n, HEAD_BYTES));
          cursor.offset += n;
          this.#consume(cursor, buf.subarray(0, n), read, diagnostics);
        }
      } finally {
        closeSync(fd);
      }
    }
    const after = listFiles(this.path);
    if (!sameListing(listed, after)) return "moved";
    // Only cursors of files no longer on disk are dropped.
    const onDisk = new Set(after.map((f) => f.ino));
    for (const ino of [...this.#cursors.keys()]) if (!onDisk.has(ino)) this.#cursors.delete(ino);
    return { ...read, diagnostics };
  }

  /** Whether the open file is the one the cursor was reading: as long, and the same start. */
  #sameFile(fd: number, size: number, cursor: FileCursor): boolean {
    if (size < cursor.offset) return false;
    if (cursor.head.length === 0) return true;
    const head = new Uint8Array(cursor.head.length);
    const n = readSync(fd, head, 0, head.length, 0);
    return n === head.length && sameBytes(head, cursor.head);
  }

  /**
   * Takes in the next bytes of a file (which end at `cursor.offset`): the lines they end
   * are parsed, the rest is kept in `cursor.partial`. Each byte is looked at once, and a
   * line longer than MAX_LINE_BYTES is dropped as it passes.
   */
  #consume(
    cursor: FileCursor,
    bytes: Uint8Array,
    read: RecordsRead,
    diagnostics: string[],
  ): void {
    // The file offset of bytes[0].
    const base = cursor.offset - bytes.length;
    const decoder = new TextDecoder();
    let start = 0;
    for (let nl = bytes.indexOf(10); nl !== -1; nl = bytes.indexOf(10, start)) {
      if (cursor.line !== null) cursor.line++;
      const at = base + start - cursor.partial.length;
      const piece = bytes.subarray(start, nl);
      start = nl + 1;
      if (cursor.skipping !== undefined) {
        diagnostics.push(
          `journal ${lineName(cursor.path, cursor.line, cursor.skipping)}: a line longer than ` +
            `${MAX_LINE_BYTES} bytes was skipped`,
        );
        cursor.skipping = undefined;
        continue;
      }
      const whole = cursor.partial.length > 0 ? appendTo(cursor.partial, piece) : piece;
      cursor.partial = new Uint8Array(0);
      const line = decoder.decode(whole).replace(/\r$/, "");
      if (line.trim() === "") continue;
      const parsed = parseLineRecovering(line);
      for (const head of parsed.torn) read.torn.push({ before: read.records.length, head });
      read.records.push(...parsed.records);
      if (parsed.error) {
        diagnostics.push(`journal ${lineName(cursor.path, cursor.line, at)}: ${parsed.error}`);
      }
    }
    if (cursor.skipping !== undefined) return;
    const rest = bytes.subarray(start);
    if (cursor.partial.length + rest.length > MAX_LINE_BYTES) {
      cursor.skipping = base + start - cursor.partial.length;
      cursor.partial = new Uint8Array(0);
      return;
    }
    cursor.partial = appendTo(cursor.partial, rest);
  }
}

/** Reads the whole journal once. */
export function readJournal(path: string): JournalRead {
  const reader = new JournalReader(path);
  const read = reader.read();
  return { ...read, diagnostics: [...read.diagnostics, ...reader.tornTails()] };
}
