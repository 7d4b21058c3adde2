/**
 * A fair share of the event loop for loops that read as fast as data comes. Under Bun a
 * read from a pipe that always has data resolves as a microtask: a loop of such reads never
 * lets the event loop turn, and timers (the grace after the client left, the deadline after
 * the agent exited) and signal handlers (SIGTERM: the runtime queues it as a task of the
 * event loop) never run. Each reading loop holds one LoopTurn and awaits `yield()` whenever
 * `due()`: once it has run SLICE_MS without a turn of the event loop, it yields one (a
 * macrotask), so the rest of turnguard gets its turn at least that often.
 *
 * A yield between reads is not enough when what is done with one read takes long: the
 * runtime hands a reader whatever piled up in its buffer while the reader worked (192 KiB
 * and more), and a flood of short lines (`yes`: 2 bytes a line) cost the proxy a few
 * microseconds a line, so one read was 0.4–0.7 s of work without a turn on a loaded
 * machine and seconds beside CPU burners; the slower the reader, the more piles up (up to
 * 18 MiB in one read were seen). So a loop that reads lines hands each chunk on in pieces
 * (`pieceEnd`): each sized from what the last piece cost per byte to take about PIECE_MS
 * (at most MAX_PIECE_BYTES, and at most four times the last piece: one cheap piece does not
 * let a whole pile through), cut after a line's end (a line is never split by it), with a
 * yield between pieces when one is due. Cheap traffic comes in pieces of MAX_PIECE_BYTES,
 * larger than what one read gives in the common case, so its chunks stay whole.
 */

/** How long a reading loop may run before it lets the event loop turn. */
export const SLICE_MS = 10;

/** What one piece of a chunk should take, at the cost per byte last measured. */
export const PIECE_MS = 2;

/** The smallest piece a chunk is cut into (a line longer than it stays whole). */
export const MIN_PIECE_BYTES = 4096;

/** The largest piece (a line longer than it stays whole). */
export const MAX_PIECE_BYTES = 256 * 1024;

const LF = 0x0a;

/** One reading loop's share of the event loop. */
export class LoopTurn {
  #since = performance.now();
  /** Bytes a piece may have (from the last piece's cost). */
  #pieceBytes = MIN_PIECE_BYTES;

  /** Whether the loop has had its slice: then `yield()` before going on. */
  due(): boolean {
    return performance.now() - this.#since >= SLICE_MS;
  }

  /** Lets the event loop turn once (timers, I/O callbacks, signal handlers). */
  async yield(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#since = performance.now();
  }

  /**
   * Where the next piece of `chunk` from `at` ends: after the last line end within the
   * piece size, or after the first line end past it when a line is longer, or the chunk's
   * end when no line ends in what is left.
   */
  pieceEnd(chunk: Uint8Array, at: number): number {
    const room = this.#pieceBytes;
    if (chunk.length - at <= room) return chunk.length;
    const last = chunk.lastIndexOf(LF, at + room - 1);
    if (last >= at) return last + 1;
    const next = chunk.indexOf(LF, at + room);
    return next === -1 ? chunk.length : next + 1;
  }

  /** A piece of `bytes` took `ms` to handle: the next piece is sized from it. */
  spent(bytes: number, ms: number): void {
    const fits = ms > 0 ? (bytes * PIECE_MS) / ms : MAX_PIECE_BYTES;
    this.#pieceBytes = Math.max(
      MIN_PIECE_BYTES,
      Math.min(fits, MAX_PIECE_BYTES, 4 * Math.max(bytes, this.#pieceBytes)),
    );
  }
}
