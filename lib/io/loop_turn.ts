/**
 * A fair share of the event loop for loops that read as fast as data comes. Under Bun a
 * read from a pipe that always has data (an agent flooding its stdout) resolves as a
 * microtask: a loop of such reads never lets the event loop turn, and timers (the grace
 * after the client left, the deadline after the agent exited) and signal handlers (SIGTERM)
 * never run. Each reading loop holds one LoopTurn and awaits `due()` after each chunk: once
 * it has run SLICE_MS without a turn of the event loop, it yields one (a macrotask), so
 * the rest of turnguard gets its turn at least that often, at the cost of one yield per
 * slice.
 */

/** How long a reading loop may run before it lets the event loop turn. */
export const SLICE_MS = 10;

/** One reading loop's share of the event loop. */
export class LoopTurn {
  #since = performance.now();

  /** Whether the loop has had its slice: then `yield()` before the next read. */
  due(): boolean {
    return performance.now() - this.#since >= SLICE_MS;
  }

  /** Lets the event loop turn once (timers, I/O callbacks, signal handlers). */
  async yield(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#since = performance.now();
  }
}
