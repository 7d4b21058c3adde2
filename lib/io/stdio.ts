/**
 * turnguard's own stdout and stderr. Under Bun, bytes go straight to the file descriptor
 * (`Bun.write`: every byte is written, waiting while a pipe is full); creating
 * `process.stdout` there costs about 8 ms and 6 MiB at every start. Elsewhere (Deno from
 * source) the Node streams are used. Either way every write is queued in order, and
 * `stdioIdle()` resolves once all of it has been handed to the operating system, so the
 * process can exit without cutting a byte.
 */
import { write as fdWrite } from "node:fs";
import type { Writable } from "node:stream";
import { bun } from "./bun_api.ts";

/** The largest piece handed to `Bun.write` at once. */
const WRITE_SLICE = 1024 * 1024;

/**
 * Most bytes queued for stderr while its reader does not take them (written on the thread
 * pool, they no longer hold turnguard back): past it, what comes is dropped and counted, and
 * one line says how much once the queue drained. stdout is the client's wire or the agent's
 * output and waits for its reader instead.
 */
export const STDERR_QUEUE_BYTES = 8 * 1024 * 1024;

/** Which of the two streams. */
export type StdName = "stdout" | "stderr";

/** One standard stream: an ordered queue of writes to its descriptor. */
export class StdStream {
  #tail: Promise<void> = Promise.resolve();
  #pending = 0;
  #broken = false;
  /** stderr: bytes queued, and bytes dropped past STDERR_QUEUE_BYTES since the last note. */
  #queued = 0;
  #dropped = 0;
  #node: Writable | null = null;
  #writable: Writable | null = null;

  constructor(readonly name: StdName) {}

  /** True once the reader went away (EPIPE): later bytes are dropped. */
  get broken(): boolean {
    return this.#broken;
  }

  /** Queues `data`; resolves once it is written (or dropped because the reader left). */
  write(data: string | Uint8Array): Promise<void> {
    if (data.length === 0) return this.#tail;
    if (this.name === "stderr") {
      if (this.#queued + data.length > STDERR_QUEUE_BYTES) {
        this.#dropped += data.length;
        return this.#tail;
      }
      this.#queued += data.length;
    }
    this.#pending++;
    this.#tail = this.#tail.then(async () => {
      try {
        if (this.#broken) return;
        if (bun && this.#node === null) {
          await (this.name === "stderr" ? this.#poolWrite(data) : this.#bunWrite(bun, data));
        } else await this.#nodeWrite(data);
      } catch {
        this.#broken = true;
      } finally {
        this.#pending--;
        if (this.name === "stderr") this.#drained(data.length);
      }
    });
    return this.#tail;
  }

  /** stderr took `n` queued bytes; once all is out, says what was dropped meanwhile. */
  #drained(n: number): void {
    this.#queued -= n;
    if (this.#queued > 0 || this.#dropped === 0 || this.#broken) return;
    const dropped = this.#dropped;
    this.#dropped = 0;
    void this.write(
      `\nturnguard: ${dropped} bytes for stderr were dropped: it was not read (a queue of ${STDERR_QUEUE_BYTES} bytes was full)\n`,
    );
  }

  /**
   * Writes through `Bun.write` in slices of at most WRITE_SLICE bytes: what a full pipe
   * does not take at once is copied by the runtime, so a long line costs a slice of copy,
   * not a second copy of the line.
   */
  async #bunWrite(api: NonNullable<typeof bun>, data: string | Uint8Array): Promise<void> {
    const dest = api[this.name];
    if (typeof data === "string" || data.length <= WRITE_SLICE) {
      await api.write(dest, data);
      return;
    }
    for (let at = 0; at < data.length; at += WRITE_SLICE) {
      await api.write(dest, data.subarray(at, at + WRITE_SLICE));
    }
  }

  /**
   * stderr under Bun: written on the runtime's thread pool (`fs.write`). `Bun.write` of a
   * small piece to a pipe that is full blocks the whole thread in write(2): a client that
   * never reads turnguard's stderr froze the relay, its timers and its SIGTERM handler
   * (tests/e2e/hostile_live.test.ts "turnguard's stderr, never read"). A descriptor left
   * non-blocking by whoever started turnguard answers EAGAIN: the write is tried again.
   */
  async #poolWrite(data: string | Uint8Array): Promise<void> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    for (let at = 0; at < bytes.length;) {
      try {
        at += await new Promise<number>((resolve, reject) =>
          fdWrite(2, bytes, at, bytes.length - at, null, (err, n) => err ? reject(err) : resolve(n))
        );
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  }

  /** Writes through the Node stream, resolving once it takes more (or breaks). */
  #nodeWrite(data: string | Uint8Array): Promise<void> {
    const stream = this.node();
    if (stream.write(data)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        stream.off("drain", done).off("error", done);
        resolve();
      };
      stream.once("drain", done).once("error", done);
    });
  }

  /** The Node stream itself (for code that streams through Node APIs). */
  node(): Writable {
    if (this.#node === null) {
      this.#node = process[this.name];
      this.#node.on("error", () => {
        this.#broken = true;
      });
    }
    return this.#node;
  }

  /**
   * A Writable over this stream for streaming copies (backpressure, `error` on EPIPE):
   * under Bun one that writes to the descriptor through this queue, else the Node stream.
   */
  writable(): Writable {
    if (!bun) return this.node();
    if (this.#writable) return this.#writable;
    const { Writable } = process.getBuiltinModule("node:stream");
    this.#writable = new Writable({
      write: (chunk: Uint8Array, _encoding, done) => {
        const written = this.write(chunk);
        // stderr's own queue is bounded in bytes: the Writable buffers nothing besides it.
        if (this.name === "stderr") done(this.#broken ? brokenPipe() : null);
        else written.then(() => done(this.#broken ? brokenPipe() : null));
      },
    });
    return this.#writable;
  }

  /** Resolves once everything queued so far has left the process. */
  async idle(): Promise<void> {
    for (;;) {
      const w = this.#writable;
      if (this.#pending > 0) await this.#tail;
      else if (w !== null && w.writableLength > 0 && !w.destroyed && !w.errored) {
        // The Writable hands its next buffered chunk to the queue on a later tick.
        await new Promise((resolve) => setImmediate(resolve));
      } else break;
    }
    const node = this.#node;
    if (node !== null && !this.#broken && node.writableLength > 0) {
      await new Promise<void>((resolve) => {
        node.once("error", () => resolve());
        node.write("", () => resolve());
      });
    }
  }
}

function brokenPipe(): Error {
  return Object.assign(new Error("EPIPE: broken pipe, write"), { code: "EPIPE" });
}

/** turnguard's standard output. */
export const stdout: StdStream = new StdStream("stdout");
/** turnguard's standard error. */
export const stderr: StdStream = new StdStream("stderr");

/** Resolves once every byte written to stdout and stderr has left the process. */
export async function stdioIdle(): Promise<void> {
  await Promise.all([stdout.idle(), stderr.idle()]);
}
