/**
 * One direction's output: bytes go out in the order they were put in, even when a
 * response waits for an asynchronous step; turnguard's own lines are slipped in only
 * between lines, never inside one that is still streaming; and the source is paused while
 * the sink or the queue is full.
 */
import { joinBytes } from "../acp/lines.ts";
import type { ByteSink } from "./agent_io.ts";

const LF = 0x0a;

/**
 * Bytes waiting (behind a pending response, or in the sink's buffer) above which the
 * source is paused. Pausing at every full sink buffer would stop and restart the source
 * for every chunk.
 */
export const HIGH_WATER = 4 * 1024 * 1024;

/**
 * Bytes of turnguard's own lines handed over while the sink was full (since it last
 * drained) above which the peer is flooding without reading: its source is paused
 * (`onOwnPressure`). A peer that reads never gets near it.
 */
export const OWN_HIGH_WATER = 1024 * 1024;

/**
 * Pieces forwarded together up to this size are copied into one write when the sink takes
 * one piece at a time (a Node stream); written apart beyond.
 */
const JOIN_MAX_BYTES = 16 * 1024;

type Entry = { bytes: Uint8Array | null; ready: boolean };

/** An ordered, line-aware writer over one Writable. */
export class LineOutput {
  #sink: ByteSink;
  #queue: Entry[] = [];
  #queuedBytes = 0;
  #atBoundary = true;
  #waiting: Uint8Array[] = [];
  #sinkFull = false;
  /** Bytes handed to the sink since it first said it was full (not every runtime counts them). */
  #unflushed = 0;
  #paused = false;
  #idle: (() => void)[] = [];
  #broken = false;
  /** Bytes of turnguard's own lines put in while the sink was full or the queue waited. */
  #ownWhileFull = 0;
  #ownPaused = false;

  /**
   * `onPressure(true)` asks to pause the source whose bytes this writes; `onPressure(false)`
   * to resume it. `onOwnPressure` does the same for the peer this writes to, when
   * turnguard's own answers to it pile up (OWN_HIGH_WATER).
   */
  constructor(
    sink: ByteSink,
    readonly onPressure: (pause: boolean) => void = () => {},
    readonly onOwnPressure: (pause: boolean) => void = () => {},
  ) {
    this.#sink = sink;
    sink.on("drain", () => {
      this.#sinkFull = false;
      this.#unflushed = 0;
      this.#ownWhileFull = 0;
      this.#pressure();
      this.#notifyIdle();
    });
    sink.on("error", () => {
      // The reader went away: drop what is left, never crash the proxy.
      this.#broken = true;
      this.#sinkFull = false;
      this.#pressure();
      this.#notifyIdle();
    });
  }

  /** True when the sink's reader is gone. */
  get broken(): boolean {
    return this.#broken;
  }

  /** Forwards bytes: whole lines, or a piece of a line that is streaming through. */
  write(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (this.#waiting.length > 0) {
      // Our lines go right after the line that is streaming ends.
      const nl = bytes.indexOf(LF);
      if (nl !== -1) {
        this.#enqueue({ bytes: bytes.subarray(0, nl + 1), ready: true });
        this.#atBoundary = true;
        this.#releaseWaiting();
        this.write(bytes.subarray(nl + 1));
        return;
      }
    }
    this.#atBoundary = bytes[bytes.length - 1] === LF;
    this.#enqueue({ bytes, ready: true });
  }

  /**
   * Forwards several pieces, in order, as `write` would one by one; to a sink that takes
   * pieces at once (`writev`) they go in one call when nothing waits before them.
   */
  writeParts(parts: readonly Uint8Array[]): void {
    const sink = this.#sink;
    let total = 0;
    for (const part of parts) total += part.length;
    if (sink.writev === undefined || this.#waiting.length > 0 || this.#queue.length > 0) {
      if (sink.writev === undefined && total <= JOIN_MAX_BYTES) this.write(joinBytes(parts, total));
      else for (const part of parts) this.write(part);
      return;
    }
    if (total === 0 || this.#broken) return;
    const last = parts[parts.length - 1];
    this.#atBoundary = last[last.length - 1] === LF;
    const accepted = sink.writev(parts);
    if (!accepted || this.#sinkFull) {
      this.#sinkFull = true;
      this.#unflushed += total;
      this.#pressure();
    }
  }

  /**
   * Reserves the place of a response decided later; everything written after it waits
   * behind it. The promise gives the bytes to send, or null to send nothing.
   */
  writeLater(promise: Promise<Uint8Array | null>): void {
    const entry: Entry = { bytes: null, ready: false };
    this.#enqueue(entry);
    const settle = (bytes: Uint8Array | null) => {
      entry.bytes = bytes;
      entry.ready = true;
      this.#drain();
    };
    promise.then(settle, () => settle(null));
  }

  /** Sends one of turnguard's own complete lines at the next line boundary. */
  inject(line: Uint8Array): void {
    if (this.#sinkFull || this.#queue.length > 0 || this.#waiting.length > 0) {
      this.#ownWhileFull += line.length;
    }
    if (this.#atBoundary) this.#enqueue({ bytes: line, ready: true });
    else this.#waiting.push(line);
    this.#pressure();
  }

  /**
   * The peer's stream has ended: when lines of turnguard's own still wait for a boundary,
   * the unterminated last line is ended with `\n` so they go out as lines of their own.
   */
  finish(): void {
    if (this.#waiting.length > 0) this.write(new Uint8Array([LF]));
  }

  /** Resolves once everything put in so far has been taken by the sink (not buffered). */
  flushed(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #isIdle(): boolean {
    return this.#queue.length === 0 && (!this.#sinkFull || this.#broken);
  }

  #notifyIdle(): void {
    if (!this.#isIdle()) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }

  /** Flushes, then ends the sink. */
  async end(): Promise<void> {
    await this.flushed();
    if (!this.#broken) this.#sink.end();
  }

  #releaseWaiting(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const line of waiting) this.#enqueue({ bytes: line, ready: true });
  }

  #enqueue(entry: Entry): void {
    if (this.#queue.length === 0 && entry.ready) {
      this.#send(entry.bytes);
      return;
    }
    this.#queue.push(entry);
    this.#queuedBytes += entry.bytes?.length ?? 0;
    this.#pressure();
  }

  #drain(): void {
    while (this.#queue.length > 0 && this.#queue[0].ready) {
      const entry = this.#queue.shift()!;
      this.#queuedBytes -= entry.bytes?.length ?? 0;
      this.#send(entry.bytes);
    }
    this.#notifyIdle();
    this.#pressure();
  }

  #send(bytes: Uint8Array | null): void {
    if (bytes === null || bytes.length === 0 || this.#broken) return;
    const accepted = this.#sink.write(bytes);
    if (!accepted || this.#sinkFull) {
      this.#sinkFull = true;
      this.#unflushed += bytes.length;
      this.#pressure();
    }
  }

  #pressure(): void {
    const pause = !this.#broken &&
      (this.#unflushed > HIGH_WATER || this.#queuedBytes > HIGH_WATER);
    if (pause !== this.#paused) {
      this.#paused = pause;
      this.onPressure(pause);
    }
    const own = !this.#broken && this.#ownWhileFull > OWN_HIGH_WATER;
    if (own !== this.#ownPaused) {
      this.#ownPaused = own;
      this.onOwnPressure(own);
    }
  }
}
