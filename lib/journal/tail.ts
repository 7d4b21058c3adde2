/**
 * Reading the journal from its end: `wait`, `log` and `retry` show the latest turns, so
 * they read the files backwards in blocks — the live file first, then the rotated ones,
 * newest first — and stop as soon as what they show is complete. Lines of turns they do
 * not show are passed over by their head (`readHead`), without being parsed; the lines of
 * the turns they show are parsed and validated as a forward read would. Time and memory
 * grow with what is shown, not with the journal's length.
 *
 * When is it complete? Turns are ordered by their first record (their `turn_started`). Read
 * backwards, a turn whose `turn_started` was seen is anchored: every turn not met yet
 * started before it. So reading stops once `limit` matching turns are anchored and every
 * matching turn met is anchored (a turn whose start was lost is read to the journal's
 * start, where it is ordered by its first record, as a forward read orders it).
 */
import { closeSync, fstatSync, readSync } from "node:fs";
import { errCode } from "../io/logfs.ts";
import { isTarget } from "./fold.ts";
import {
  type FileCursor,
  HEAD_BYTES,
  lineName,
  listFiles,
  MAX_LINE_BYTES,
  type RecordsRead,
  sameListing,
  type TornRecord,
} from "./reader.ts";
import {
  type JournalRecord,
  parseLineRecovering,
  readHead,
  type RecordHead,
  turnKey,
  writerKey,
} from "./records.ts";
import { openRegularForRead } from "../io/private_file.ts";

/** Which turns a read from the end is for. */
export interface TailQuery {
  /** Turns whose session id or name is this; every turn when undefined. */
  target?: string;
  /** How many of the latest matching turns are shown. */
  limit: number;
}

/** What a read from the end brought: the shown turns' records, in journal order. */
export interface TailRead extends RecordsRead {
  /** Skipped lines among those read, in journal order. */
  diagnostics: string[];
  /** Where a forward reader goes on from (one cursor per file, at its end). */
  cursors: FileCursor[];
}

/** Bytes of the first block read backwards; each next block is twice as large, up to MAX_BLOCK. */
const BLOCK = 16 * 1024;
const MAX_BLOCK = 1 << 20;
/** Tries while rotations keep racing a read; then the last try's result stands. */
const MAX_TRIES = 20;

/** One item met reading backwards. */
type Item = { record: JournalRecord } | { torn: RecordHead };

/** A skipped line; its line number is known once its file was read to the start. */
interface Skipped {
  path: string;
  /** Lines of its file after it. */
  fromEnd: number;
  byte: number;
  message: string;
}

/** The state of one backward read: the items kept and whether they are enough. */
class Collector {
  readonly #query: TailQuery;
  /** Items kept, newest first. */
  readonly items: Item[] = [];
  readonly skipped: Skipped[] = [];
  readonly #anchored = new Set<string>();
  readonly #unanchored = new Set<string>();

  constructor(query: TailQuery) {
    this.#query = query;
  }

  get enough(): boolean {
    return this.#anchored.size >= this.#query.limit && this.#unanchored.size === 0;
  }

  /** Takes one whole line met reading backwards. */
  line(line: string, where: Omit<Skipped, "message">): void {
    if (line.trim() === "") return;
    // A line holding only one record whose head names a turn not shown is passed over.
    // (`{"ts":"` cannot occur unescaped inside a record: a second one means a glued record.)
    const head = line.indexOf('{"ts":"', 1) === -1 ? readHead(line) : null;
    if (head?.event && !isTarget(head, this.#query.target)) return;
    const parsed = parseLineRecovering(line);
    if (parsed.error) this.skipped.push({ ...where, message: parsed.error });
    // Within the line, the torn part came first: taken in reverse, newest first.
    const items: Item[] = [
      ...parsed.torn.map((torn) => ({ torn })),
      ...parsed.records.map((record) => ({ record })),
    ];
    for (const item of items.reverse()) this.#take(item);
  }

  /** Takes the head of a record cut short at the end of a rotated file. */
  torn(head: RecordHead): void {
    this.#take({ torn: head });
  }

  #take(item: Item): void {
    const id = "record" in item ? { ...item.record, writer: writerKey(item.record) } : item.torn;
    if (!isTarget(id, this.#query.target)) return;
    const key = turnKey(id);
    if (this.#anchored.has(key)) {
      this.items.push(item);
      return;
    }
    // A turn met after `limit` others are anchored started before them: not shown.
    if (this.#anchored.size >= this.#query.limit && !this.#unanchored.has(key)) return;
    this.items.push(item);
    // A turn's first record anchors it, also when it was cut short (its place is known).
    const event = "record" in item ? item.record.event : item.torn.event;
    if (event === "turn_started") {
      this.#unanchored.delete(key);
      this.#anchored.add(key);
    } else {
      this.#unanchored.add(key);
    }
  }
}

/** Reads one file backwards into the collector until it has enough; the file's cursor. */
function readFileBackwards(
  fd: number,
  path: string,
  size: number,
  ino: number,
  live: boolean,
  into: Collector,
  blockBytes: number,
): FileCursor {
  const decoder = new TextDecoder();
  const head = new Uint8Array(Math.min(HEAD_BYTES, size));
  if (head.length > 0) readSync(fd, head, 0, head.length, 0);
  /** Bytes of the line that begins before `pos` and ends at `tailStart`. */
  let carry = new Uint8Array(0);
  let pos = size;
  let end: number | null = null;
  let partial = new Uint8Array(0);
  let fromEnd = 0;
  let reachedStart = size === 0;
  let blockSize = blockBytes;
  /** Set while passing over a line longer than MAX_LINE_BYTES: its bytes are not kept. */
  let skipping = false;
  const longLine = `skipped a line longer than ${MAX_LINE_BYTES} bytes`;
  while (pos > 0 && !(end !== null && into.enough)) {
    const from = Math.max(0, pos - blockSize);
    blockSize = Math.min(blockSize * 2, Math.max(blockBytes, MAX_BLOCK));
    const block = new Uint8Array(pos - from + carry.length);
    const n = readSync(fd, block, 0, pos - from, from);
    if (n !== pos - from) break;
    block.set(carry, pos - from);
    pos = from;
    let stop = block.length;
    if (skipping) {
      // Looking for the start of the long line: the newline before it.
      const nl = block.lastIndexOf(10);
      if (nl === -1 && pos > 0) continue;
      skipping = false;
      into.skipped.push({ path, fromEnd: fromEnd++, byte: pos + nl + 1, message: longLine });
      if (end === null) end = pos + nl + 1;
      if (nl === -1) {
        reachedStart = true;
        break;
      }
      stop = nl + 1;
    } else if (end === null) {
      // The file's last newline: what follows it has no newline yet.
      const last = block.lastIndexOf(10);
      if (last === -1 && pos > 0) {
        carry = block;
        if (carry.length > MAX_LINE_BYTES) {
          carry = new Uint8Array(0);
          skipping = true;
        }
        continue;
      }
      end = pos + last + 1;
      partial = block.slice(last + 1);
      if (!live && partial.length > 0) {
        // Nothing will complete the last line of a rotated file: it is torn.
        const torn = readHead(decoder.decode(partial));
        into.skipped.push({ path, fromEnd: -1, byte: end, message: "skipped a torn last line" });
        if (torn?.event) into.torn(torn);
      }
      stop = last + 1;
    }
    // Lines whose newline lies in block[0, stop), newest first; the first one may begin in
    // an earlier block, unless this block starts the file.
    let lineEnd = stop - 1;
    while (lineEnd >= 0) {
      // (lastIndexOf from -1 would search from the end.)
      const nl = lineEnd === 0 ? -1 : block.lastIndexOf(10, lineEnd - 1);
      if (nl === -1 && pos > 0) break;
      const text = decoder.decode(block.subarray(nl + 1, lineEnd)).replace(/\r$/, "");
      into.line(text, { path, fromEnd: fromEnd++, byte: pos + nl + 1 });
      lineEnd = nl;
      if (into.enough) break;
    }
    if (lineEnd < 0) {
      carry = new Uint8Array(0);
      reachedStart = pos === 0;
    } else {
      carry = block.slice(0, lineEnd + 1);
      // A line this long is passed over, not carried whole into every earlier block.
      if (carry.length > MAX_LINE_BYTES && !into.enough) {
        carry = new Uint8Array(0);
        skipping = true;
      }
    }
    if (into.enough) break;
  }
  if (end === null) end = 0;
  // Line numbers are known once the file was read from its start.
  const lines = fromEnd;
  return live
    ? {
      ino,
      path,
      offset: end,
      partial: new Uint8Array(0),
      line: reachedStart ? lines : null,
      head,
    }
    : { ino, path, offset: size, partial, line: reachedStart ? lines : null, head };
}

/**
 * Reads the latest turns that match the query from the journal's end, in blocks from
 * `blockBytes` up (tests read in small blocks). A read that raced a rotation is done again.
 */
export function readTail(path: string, query: TailQuery, blockBytes: number = BLOCK): TailRead {
  for (let tries = 1;; tries++) {
    const listed = listFiles(path);
    const collector = new Collector(query);
    const cursors: FileCursor[] = [];
    const diagnostics: string[] = [];
    let moved = false;
    for (let i = listed.length - 1; i >= 0; i--) {
      const file = listed[i];
      let fd: number;
      try {
        fd = openRegularForRead(file.path);
      } catch (err) {
        if (errCode(err) === "ENOENT") {
          moved = true;
          break;
        }
        diagnostics.push(`journal ${file.path}: cannot read (${errCode(err)})`);
        continue;
      }
      try {
        const st = fstatSync(fd);
        if (st.ino !== file.ino) {
          moved = true;
          break;
        }
        if (collector.enough) {
          // Not read: a forward reader goes on from its end.
          const head = new Uint8Array(Math.min(HEAD_BYTES, st.size));
          if (head.length > 0) readSync(fd, head, 0, head.length, 0);
          cursors.unshift({
            ino: st.ino,
            path: file.path,
            offset: st.size,
            partial: new Uint8Array(0),
            line: null,
            head,
          });
        } else {
          const live = i === listed.length - 1 && file.path === path;
          cursors.unshift(
            readFileBackwards(fd, file.path, st.size, st.ino, live, collector, blockBytes),
          );
        }
      } finally {
        closeSync(fd);
      }
    }
    if (!moved && !sameListing(listed, listFiles(path))) moved = true;
    const read = inJournalOrder(collector, cursors);
    if (!moved || tries >= MAX_TRIES) {
      return { ...read, diagnostics: [...diagnostics, ...read.diagnostics], cursors };
    }
  }
}

/** The collector's items and skipped lines, oldest first. */
function inJournalOrder(
  collector: Collector,
  cursors: readonly FileCursor[],
): RecordsRead & { diagnostics: string[] } {
  const records: JournalRecord[] = [];
  const torn: TornRecord[] = [];
  for (let i = collector.items.length - 1; i >= 0; i--) {
    const item = collector.items[i];
    if ("record" in item) records.push(item.record);
    else torn.push({ before: records.length, head: item.torn });
  }
  const total = new Map(cursors.map((c) => [c.path, c.line]));
  const diagnostics = collector.skipped.toReversed().map((s) => {
    const lines = total.get(s.path) ?? null;
    const line = lines === null ? null : s.fromEnd < 0 ? lines + 1 : lines - s.fromEnd;
    return `journal ${lineName(s.path, line, s.byte)}: ${s.message}`;
  });
  return { records, torn, diagnostics };
}
