/**
 * The streaming line splitter of the proxy: cuts a byte stream into newline-terminated
 * lines without ever decoding it. Lines up to the inspection limit come out whole (so the
 * proxy can look at them); longer lines come out piece by piece as their bytes arrive,
 * never held whole in memory. Bytes are never changed, added or lost: concatenating every
 * segment gives back exactly the input.
 */
import { Buffer } from "node:buffer";

/** The ACP SDK's own limit for one message (32 MiB); longer lines are not inspected. */
export const DEFAULT_INSPECT_LIMIT = 32 * 1024 * 1024;

const LF = 0x0a;

/** Held bytes of one line beyond which they are copied into one growing buffer. */
const GROW_FROM = 1024 * 1024;
/** The longest line that spanned chunks joined in the reused scratch buffer for a look. */
const SCRATCH_MAX = 1024 * 1024;
/** The scratch buffer's first size. */
const SCRATCH_MIN = 64 * 1024;
/** The largest inspection limit a growing buffer reserves room for (else pieces are joined). */
const GROW_MAX = 4 * 1024 * 1024 * 1024;

/** An ArrayBuffer of `length` bytes that can grow to `max` (ES2024 resizable buffers). */
function resizable(length: number, max: number): ArrayBuffer {
  const Resizable = ArrayBuffer as unknown as new (
    length: number,
    options: { maxByteLength: number },
  ) => ArrayBuffer;
  return new Resizable(length, { maxByteLength: max });
}

/**
 * One piece of the stream, in order. `at` is where its bytes start in the chunk being
 * pushed, when they are a view of it; -1 when they are not (held from earlier chunks, or
 * joined). A consumer can tell adjacent pieces of one chunk by it, without asking each
 * view for its buffer (which costs the runtime an allocation per view).
 */
export type Segment =
  /** A complete line with its terminator (`\n` or `\r\n`; none for a last line at EOF). */
  | { kind: "line"; bytes: Uint8Array; at: number }
  /** Bytes of a line longer than the limit: forwarded uninspected; `end` when it finishes. */
  | { kind: "pass"; bytes: Uint8Array; end: boolean; at: number }
  /**
   * A piece of a line that spanned chunks and that `look` dealt with: forwarded as it is.
   * The pieces are the line's own bytes as they came (views of their chunks), never a copy.
   */
  | { kind: "seen"; bytes: Uint8Array; at: number };

/** Receives the segments of each pushed chunk, in order. */
export type SegmentSink = (segment: Segment) => void;

/**
 * Looks at a complete line, `bytes[start, end)`, before a segment is made of it: true when
 * it was dealt with. `bytes` is the pushed chunk (the consumer knows the line by its
 * offsets; no view of it is made) or, for a line that spanned chunks, a scratch copy that
 * is overwritten by the next such line: a look keeps nothing of `bytes`. The common lines
 * cost no allocation this way.
 */
export type LineLook = (bytes: Uint8Array, start: number, end: number) => boolean;

/**
 * Splits a byte stream into lines. Segments are subarrays of the pushed chunks whenever a
 * line lies within one chunk (no copy); only a line spanning chunks is joined.
 */
export class LineSplitter {
  #held: Uint8Array[] = [];
  #heldBytes = 0;
  /** The held line's bytes copied into one growing buffer, once it is long (see GROW_FROM). */
  #grown: ArrayBuffer | null = null;
  #oversize = false;
  /** Where a line that spanned chunks is joined for a look (see #lookHeld). */
  #scratch = new Uint8Array(0);

  /** `limit`: the longest line, terminator included, that is returned whole. */
  constructor(readonly limit: number = DEFAULT_INSPECT_LIMIT) {
    if (!(limit >= 1)) throw new RangeError(`line limit must be at least 1, got ${limit}`);
  }

  /** Bytes of an unfinished line waiting for its end. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** True while the bytes of an over-limit line are being passed through. */
  get inOversizeLine(): boolean {
    return this.#oversize;
  }

  /**
   * Splits one chunk; `emit` is called for every segment it completes, except the lines
   * `look` (when given) dealt with. `skim` (when given) is shown the chunk's whole lines
   * after the one that began in an earlier chunk, `chunk[start, end)` ending with a line's
   * end, at once, when that is within the limit: true when it dealt with them all (none is
   * looked at then), false to have them looked at one by one.
   */
  push(chunk: Uint8Array, emit: SegmentSink, look?: LineLook, skim?: LineLook): void {
    if (chunk.length === 0) return;
    chunk = plainView(chunk);
    let start = 0;
    if (this.#oversize) {
      const nl = chunk.indexOf(LF);
      if (nl === -1) {
        emit({ kind: "pass", bytes: chunk, end: false, at: 0 });
        return;
      }
      emit({ kind: "pass", bytes: chunk.subarray(0, nl + 1), end: true, at: 0 });
      this.#oversize = false;
      start = nl + 1;
    } else if (this.#heldBytes > 0) {
      const nl = chunk.indexOf(LF);
      const end = nl === -1 ? chunk.length : nl + 1;
      const total = this.#heldBytes + end;
      if (total > this.limit) {
        for (const held of this.#heldPieces()) {
          emit({ kind: "pass", bytes: held, end: false, at: -1 });
        }
        this.#clearHeld();
        emit({ kind: "pass", bytes: chunk.subarray(0, end), end: nl !== -1, at: 0 });
        if (nl === -1) {
          this.#oversize = true;
          return;
        }
      } else if (nl === -1) {
        this.#hold(chunk);
        return;
      } else if (look === undefined || !this.#lookHeld(chunk, end, emit, look)) {
        this.#hold(chunk.subarray(0, end));
        emit({ kind: "line", bytes: this.#takeHeld(), at: -1 });
      }
      start = end;
    }
    const limit = this.limit;
    // Whole lines at once, when the skim deals with all of them (none can be over the limit).
    if (skim !== undefined && chunk.length - start <= limit) {
      const last = chunk.lastIndexOf(LF);
      if (last >= start && skim(chunk, start, last + 1)) start = last + 1;
    }
    for (;;) {
      const nl = chunk.indexOf(LF, start);
      if (nl === -1) break;
      if (look !== undefined && nl + 1 - start <= limit && look(chunk, start, nl + 1)) {
        start = nl + 1;
        continue;
      }
      const bytes = chunk.subarray(start, nl + 1);
      emit(
        bytes.length > limit
          ? { kind: "pass", bytes, end: true, at: start }
          : { kind: "line", bytes, at: start },
      );
      start = nl + 1;
    }
    const rest = chunk.length - start;
    if (rest === 0) return;
    if (rest > limit) {
      emit({ kind: "pass", bytes: chunk.subarray(start), end: false, at: start });
      this.#oversize = true;
    } else {
      this.#hold(chunk.subarray(start));
    }
  }

  /**
   * The held line ends at `chunk[0, end)`: `look` is shown it whole in the scratch buffer
   * (one copy into memory used before, not a fresh allocation per line: on a stream of long
   * lines that allocation was the relay's largest cost, its pages new each time). When the
   * look deals with it, its pieces go out as they came (true); else false, and nothing
   * changed.
   */
  #lookHeld(chunk: Uint8Array, end: number, emit: SegmentSink, look: LineLook): boolean {
    const total = this.#heldBytes + end;
    if (this.#grown !== null || total > SCRATCH_MAX) return false;
    if (this.#scratch.length < total) {
      const grown = Math.max(total, 2 * this.#scratch.length, SCRATCH_MIN);
      this.#scratch = new Uint8Array(Math.min(SCRATCH_MAX, grown));
    }
    const scratch = this.#scratch;
    let at = 0;
    for (const piece of this.#held) scratch.set(piece, at), at += piece.length;
    scratch.set(chunk.subarray(0, end), at);
    if (!look(scratch, 0, total)) return false;
    for (const piece of this.#held) emit({ kind: "seen", bytes: piece, at: -1 });
    this.#clearHeld();
    emit({ kind: "seen", bytes: chunk.subarray(0, end), at: 0 });
    return true;
  }

  /** Ends the stream: an unterminated last line comes out as it is. */
  end(emit: SegmentSink): void {
    if (this.#oversize) {
      this.#oversize = false;
      return;
    }
    if (this.#heldBytes > 0) emit({ kind: "line", bytes: this.#takeHeld(), at: -1 });
  }

  /**
   * Keeps a piece of the unfinished line. A short line is kept as its pieces and joined at
   * its end; a long one is copied into one buffer that grows as it comes (its pages are
   * committed as they are written), so it is never held twice (pieces and join).
   */
  #hold(bytes: Uint8Array): void {
    const at = this.#heldBytes;
    this.#heldBytes += bytes.length;
    if (this.#grown === null) {
      this.#held.push(bytes);
      if (this.#heldBytes <= GROW_FROM || this.limit > GROW_MAX) return;
      const grown = this.#grown = resizable(this.#heldBytes, this.limit);
      const all = new Uint8Array(grown);
      let to = 0;
      for (const piece of this.#held) all.set(piece, to), to += piece.length;
      this.#held = [];
      return;
    }
    (this.#grown as unknown as { resize(n: number): void }).resize(this.#heldBytes);
    new Uint8Array(this.#grown, at, bytes.length).set(bytes);
  }

  /** The held bytes as they are kept: pieces, or the one grown buffer. */
  #heldPieces(): Uint8Array[] {
    return this.#grown === null ? this.#held : [new Uint8Array(this.#grown, 0, this.#heldBytes)];
  }

  /** The held line, whole; nothing is held after. */
  #takeHeld(): Uint8Array {
    const bytes = this.#grown === null
      ? joinBytes(this.#held, this.#heldBytes)
      : new Uint8Array(this.#grown, 0, this.#heldBytes);
    this.#clearHeld();
    return bytes;
  }

  #clearHeld(): void {
    this.#held = [];
    this.#heldBytes = 0;
    this.#grown = null;
  }
}

/**
 * The bytes as a plain Uint8Array (no copy). Segments are views of their chunk, one per
 * line: a view of a Node Buffer is a Buffer, which costs Bun a prototype change each. A
 * caller that tells the chunk by identity (a LineLook's `bytes`) pushes this view.
 */
export function plainView(chunk: Uint8Array): Uint8Array {
  return Object.getPrototypeOf(chunk) === Uint8Array.prototype
    ? chunk
    : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length);
}

/** Joins byte arrays whose total length is known (into memory it does not clear first). */
export function joinBytes(parts: readonly Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.length;
  return out;
}

/** The terminator a line ends with: `\r\n`, `\n`, or `` for a last line at EOF. */
export function lineEnding(line: Uint8Array): string {
  const n = line.length;
  if (n === 0 || line[n - 1] !== LF) return "";
  return n >= 2 && line[n - 2] === 0x0d ? "\r\n" : "\n";
}
