/**
 * turnguard's own stdout and stderr. Under Bun, the main thread never waits on their reader:
 * `Bun.write` to a full pipe blocks the whole thread in write(2), so a reader that stopped
 * reading froze the relay, its timers and the SIGTERM handler. What the descriptor takes at
 * once is written from the main thread without waiting (lib/io/direct_write.ts); the rest
 * is tried again as the reader takes more (`#out`), and writes queued meanwhile join it (at
 * most WRITE_SLICE bytes), so a retry is paid per batch, not per line. Only a descriptor
 * with no direct writer (where /proc cannot reopen it) is written on the runtime's thread
 * pool. Creating `process.stdout` under Bun costs about 8 ms and 6 MiB at every start, so
 * it is not used there. Elsewhere (Deno from source) the Node streams are used. Either way
 * every write is queued in order, and `stdioIdle()` resolves once all of it has been handed
 * to the operating system, so the process can exit without cutting a byte.
 */
import { writev as fdWritev } from "node:fs";
import type { Writable } from "node:stream";
import { bun } from "./bun_api.ts";
import { BROKEN, descriptorKind, type DirectWrite, directWriter } from "./direct_write.ts";
import { IOV_MAX, libc } from "./libc.ts";

/** The largest batch written at once. */
const WRITE_SLICE = 1024 * 1024;

/** Writes queued while an earlier one is on its way: written together, in order. */
interface Batch {
  parts: Uint8Array[];
  bytes: number;
  /** Resolves once the batch is written (or dropped because the reader left). */
  done: Promise<void>;
}

const encoder = new TextEncoder();
/** The kernel buffer a pipe or socket turnguard writes to is given, where it has less. */
const DIRECT_ROOM = 1024 * 1024;
/** A write the stream did not take at once is tried again after this, */
const RETRY_MIN_MS = 1;
/** and after twice as long each time it took nothing, up to this. */
const RETRY_MAX_MS = 50;
/** What a write already done returns. */
const WRITTEN: Promise<void> = Promise.resolve();

/**
 * Most bytes queued for stderr while its reader does not take them (written without
 * waiting, they no longer hold turnguard back): past it, what comes is dropped and counted,
 * and one line says how much once the queue drained. stdout is the client's wire or the
 * agent's output and waits for its reader instead.
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
  /** Under Bun: the batch still waiting for its turn, which later writes join. */
  #batch: Batch | null = null;
  /** Under Bun: how to write without waiting (null: none; undefined: not yet asked). */
  #direct: DirectWrite | null | undefined = undefined;
  /** Resolves once the direct writer is final (a socket's waits for the C library). */
  #ready: Promise<void> | null = null;

  constructor(readonly name: StdName) {}

  /** True once the reader went away (EPIPE): later bytes are dropped. */
  get broken(): boolean {
    return this.#broken;
  }

  /** Queues `data`; resolves once it is written (or dropped because the reader left). */
  write(text: string | Uint8Array): Promise<void> {
    const pooled = bun !== undefined && this.#node === null;
    // Under Bun the bytes themselves, so that stderr's queue counts what it drains.
    const data = pooled && typeof text === "string" ? encoder.encode(text) : text;
    if (typeof data !== "string" && pooled) return this.writeParts([data]) ?? WRITTEN;
    if (data.length === 0) return this.#tail;
    if (this.#overQueue(data.length)) return this.#tail;
    this.#pending++;
    this.#tail = this.#tail.then(async () => {
      try {
        if (!this.#broken) await this.#nodeWrite(data);
      } catch {
        this.#broken = true;
      } finally {
        this.#pending--;
        if (this.name === "stderr") this.#drained(data.length);
      }
    });
    return this.#tail;
  }

  /**
   * Writes `parts`, in order: at once from the main thread when nothing is queued before
   * them and the stream takes them all now (then undefined: no promise is made on the hot
   * path), else what is left is queued as `write` does (the promise resolves once it is
   * out, or dropped). Several parts go out in one system call (writev, sendmsg): a write
   * per part woke the reader once per part.
   */
  writeParts(parts: readonly Uint8Array[]): Promise<void> | undefined {
    let total = 0;
    for (const part of parts) total += part.length;
    if (total === 0) return this.#pending > 0 ? this.#tail : undefined;
    if (bun === undefined || this.#node !== null) {
      let last: Promise<void> | undefined;
      for (const part of parts) last = this.write(part);
      return last;
    }
    if (this.#overQueue(total)) return this.#tail;
    let n = 0;
    if (this.#pending === 0 && !this.#broken) {
      const direct = this.#directWriter();
      n = direct === null ? 0 : Math.max(0, direct(parts));
      if (n > 0 && this.name === "stderr") this.#drained(n);
      if (n === total) return undefined;
    }
    let done: Promise<void> = this.#tail;
    for (const part of afterWritten(parts, n)) if (part.length > 0) done = this.#batched(part);
    return done;
  }

  /** stderr: counts `n` more bytes queued; true (and counted as dropped) past its bound. */
  #overQueue(n: number): boolean {
    if (this.name !== "stderr") return false;
    if (this.#queued + n > STDERR_QUEUE_BYTES) {
      this.#dropped += n;
      return true;
    }
    this.#queued += n;
    return false;
  }

  /**
   * Under Bun: joins `data` to the batch still waiting for its turn, or opens one; a batch
   * is written once every write before it is out.
   */
  #batched(bytes: Uint8Array): Promise<void> {
    const open = this.#batch;
    if (open !== null && open.bytes + bytes.length <= WRITE_SLICE) {
      open.parts.push(bytes);
      open.bytes += bytes.length;
      return open.done;
    }
    const batch: Batch = { parts: [bytes], bytes: bytes.length, done: this.#tail };
    this.#batch = batch;
    this.#pending++;
    this.#tail = batch.done = this.#tail.then(async () => {
      if (this.#batch === batch) this.#batch = null;
      try {
        if (!this.#broken) await this.#out(batch.parts);
      } catch {
        this.#broken = true;
      } finally {
        this.#pending--;
        if (this.name === "stderr") this.#drained(batch.bytes);
      }
    });
    return batch.done;
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
   * Writes a batch from the main thread (lib/io/direct_write.ts): what the stream takes now,
   * then the rest as it takes more, tried again after RETRY_MIN_MS, and after twice as long
   * each time it took nothing (at most RETRY_MAX_MS). Never on the runtime's thread pool
   * where there is a direct writer: a write waiting there for a reader that stopped holds a
   * pool thread, and with stdout's and stderr's both waiting the runtime's own pool work
   * stopped (closing the agent's stdin never reached it: tests/e2e/ending.test.ts "a client
   * that reads neither turnguard's stdout nor its stderr"). A stream with no direct writer
   * (where /proc cannot reopen it) is written on the pool.
   */
  async #out(parts: Uint8Array[]): Promise<void> {
    const direct = await this.#directWhenReady();
    if (direct === null) return this.#poolWrite(parts);
    let wait = RETRY_MIN_MS;
    for (;;) {
      const n = direct(parts);
      if (n === BROKEN) throw brokenPipe();
      parts = afterWritten(parts, n);
      if (parts.length === 0) return;
      wait = n > 0 ? RETRY_MIN_MS : Math.min(2 * wait, RETRY_MAX_MS);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  /** The stream's direct writer, set up at its first batch (a socket's once libc loads). */
  #directWriter(): DirectWrite | null {
    if (this.#direct !== undefined) return this.#direct;
    const fd = this.name === "stderr" ? 2 : 1;
    const kind = descriptorKind(fd);
    this.#direct = null;
    if (kind !== "socket") this.#direct = directWriter(fd, kind, null);
    // A pipe or socket with more room takes more at once: fewer writes wait.
    if (kind === "fifo" || kind === "socket") {
      this.#ready = libc().then((c) => {
        c?.widen(fd, kind, DIRECT_ROOM);
        if (kind === "socket") this.#direct = directWriter(fd, kind, c);
      });
    }
    return this.#direct;
  }

  /** The direct writer once it can be known (a socket's needs the C library loaded). */
  async #directWhenReady(): Promise<DirectWrite | null> {
    const now = this.#directWriter();
    if (now !== null || this.#ready === null) return now;
    await this.#ready;
    return this.#direct ?? null;
  }

  /**
   * Writes on the runtime's thread pool (`fs.write`). `Bun.write` of a small piece to a pipe
   * that is full blocks the whole thread in write(2): a reader that never reads turnguard's
   * stderr or stdout froze the relay, its timers and its SIGTERM handler
   * (tests/e2e/hostile_live.test.ts "turnguard's stderr, never read"; tests/e2e/ending.test.ts "a client that stops
   * reading"). A descriptor left non-blocking by whoever started turnguard answers EAGAIN:
   * the write is tried again.
   */
  async #poolWrite(parts: Uint8Array[]): Promise<void> {
    const fd = this.name === "stderr" ? 2 : 1;
    // The batch's parts go out as they are (writev), never copied into one piece: a copy
    // cost the relay more than the write itself.
    while (parts.length > 0) {
      const iov = parts.slice(0, IOV_MAX);
      let n: number;
      try {
        n = await new Promise<number>((resolve, reject) =>
          fdWritev(fd, iov, null, (err, written) => err ? reject(err) : resolve(written))
        );
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      parts = afterWritten(parts, n);
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

/** `parts` after the first `n` of their bytes were written (a part written in part keeps its rest). */
function afterWritten(parts: readonly Uint8Array[], n: number): Uint8Array[] {
  let from = 0;
  while (from < parts.length && n >= parts[from].length) n -= parts[from++].length;
  const rest = parts.slice(from);
  if (n > 0) rest[0] = rest[0].subarray(n);
  return rest;
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
