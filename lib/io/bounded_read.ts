/**
 * The one reader of files an agent controls (its session records, its logs, the inputs of
 * `scan` and `explain`). An agent can put anything at such a path: a FIFO that never
 * answers, a device that never ends, a symbolic link to a file of someone else's, a file it
 * holds a write lease on (`fcntl F_SETLEASE`: a plain `open(2)` then blocks for the
 * kernel's lease-break time, 45 s), a glob that matches ten thousand files, a file of many
 * gigabytes. So every read here:
 *
 * - opens with `O_NONBLOCK | O_NOFOLLOW`: a leased file answers EWOULDBLOCK at once, a
 *   FIFO opens without waiting for a writer, a symbolic link is refused (ELOOP);
 * - checks the opened descriptor with `fstat` and reads regular files only;
 * - runs through the runtime's asynchronous file calls (the libuv/Bun thread pool), never on
 *   the thread that relays the agent's and the client's bytes;
 * - is charged to a budget of files, bytes and milliseconds (one per turn): what does not
 *   fit is left unread and said in a diagnostic; the rest of the turn goes on.
 */
import { constants } from "node:fs";
import { open } from "node:fs/promises";

/** How much one turn may read of agent-controlled files. */
export interface ReadLimits {
  /** Files opened. */
  files: number;
  /** Bytes read, over all files. */
  bytes: number;
  /** Wall-clock time from the budget's start. */
  ms: number;
}

/**
 * The default per-turn budget: 64 files, 4 MiB, 2 s. A turn's evidence is the last 256 KiB
 * its logs and records gained (lib/cause/scan.ts), in a handful of files; this leaves room
 * for sixteen full tails and stops a glob explosion or a slow disk from holding the turn.
 */
export const DEFAULT_READ_LIMITS: ReadLimits = { files: 64, bytes: 4 * 1024 * 1024, ms: 2000 };

/** The flags every agent-controlled file is opened with. */
export const SAFE_OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/**
 * One turn's budget of files, bytes and milliseconds. Shared by everything the turn reads
 * (records, then logs); what was refused for lack of budget is collected once.
 */
export class ReadBudget {
  readonly limits: ReadLimits;
  #files = 0;
  #bytes = 0;
  readonly #deadline: number;
  readonly #clock: () => number;

  constructor(limits: ReadLimits = DEFAULT_READ_LIMITS, clock: () => number = Date.now) {
    this.limits = limits;
    this.#clock = clock;
    this.#deadline = clock() + limits.ms;
  }

  /** Files opened so far. */
  get files(): number {
    return this.#files;
  }

  /** Bytes read so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Milliseconds left before the deadline (0 once it passed). */
  msLeft(): number {
    return Math.max(0, this.#deadline - this.#clock());
  }

  /** Bytes left to read. */
  bytesLeft(): number {
    return Math.max(0, this.limits.bytes - this.#bytes);
  }

  /** Why no more files can be read now (files, time or bytes used up), or null. */
  refusal(): string | null {
    if (this.#files >= this.limits.files) return `the turn's ${this.limits.files}-file budget`;
    if (this.msLeft() === 0) return `the turn's ${this.limits.ms} ms budget`;
    if (this.bytesLeft() === 0) return `the turn's ${this.limits.bytes}-byte budget`;
    return null;
  }

  /** Takes one file from the budget; false when none is left (see `refusal`). */
  takeFile(): boolean {
    if (this.refusal() !== null) return false;
    this.#files++;
    return true;
  }

  /** Charges `n` bytes read. */
  charge(n: number): void {
    this.#bytes += n;
  }
}

/** The identity and size of a file read, from `fstat` of the opened descriptor. */
export interface OpenedStat {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** What one bounded read gave: the bytes and the file's stat, or why nothing was read. */
export type BoundedRead =
  | {
    ok: true;
    bytes: Uint8Array;
    /** File offset of the first byte read. */
    start: number;
    stat: OpenedStat;
    /** Set when the budget cut the read short: what was left out. */
    short: string | null;
  }
  | {
    ok: false;
    /** `PATH was not read: REASON`. */
    why: string;
    /** The budget was used up before the file was opened. */
    spent?: boolean;
    /** The error code of a failed call (ENOENT, ELOOP, ...), when one failed. */
    code?: string;
  };

/** What kind of file a stat describes, for a diagnostic. */
function kindOf(
  s: {
    isFIFO(): boolean;
    isCharacterDevice(): boolean;
    isBlockDevice(): boolean;
    isDirectory(): boolean;
    isSocket(): boolean;
  },
): string {
  if (s.isFIFO()) return "a FIFO";
  if (s.isCharacterDevice()) return "a character device";
  if (s.isBlockDevice()) return "a block device";
  if (s.isDirectory()) return "a directory";
  if (s.isSocket()) return "a socket";
  return "not a regular file";
}

/** Why an open failed, in words: the codes an agent can cause on purpose. */
function openProblem(code: string): string {
  if (code === "ELOOP") return "it is a symbolic link (not followed)";
  if (code === "EAGAIN" || code === "EWOULDBLOCK") {
    return "another process holds a lease on it (EWOULDBLOCK)";
  }
  if (code === "ENXIO") return "it is a socket or a device without a reader (ENXIO)";
  return `it cannot be opened (${code})`;
}

/** The error code of a failed file-system call (`ENOENT`, `EACCES`, ...). */
export function errCode(err: unknown): string {
  return (err as NodeJS.ErrnoException)?.code ?? "EIO";
}

/** Rejects after `ms` with a timeout, unless `work` settles first. */
function withinMs<T>(work: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Which bytes to read, chosen from the opened file's own stat: [start, end), or none. */
export type ReadRange = (stat: OpenedStat) => { start: number; end: number } | null;

/** The whole file. */
export const WHOLE_FILE: ReadRange = (s) => ({ start: 0, end: s.size });

/**
 * Reads the bytes `range` picks (from the `fstat` of the opened descriptor, so they are the
 * bytes of the file actually opened) of the regular file at `path`, within `budget`. The
 * bytes read are at most what the budget has left: a shorter read says so in `short`.
 * Never throws.
 */
export async function readBounded(
  path: string,
  range: ReadRange,
  budget: ReadBudget,
): Promise<BoundedRead> {
  if (!budget.takeFile()) {
    return { ok: false, why: `${path} was not read: ${budget.refusal()} was used up`, spent: true };
  }
  const work = (async (): Promise<BoundedRead> => {
    let handle;
    try {
      handle = await open(path, SAFE_OPEN_FLAGS);
    } catch (err) {
      const code = errCode(err);
      return { ok: false, why: `${path} was not read: ${openProblem(code)}`, code };
    }
    try {
      const s = await handle.stat();
      if (!s.isFile()) return { ok: false, why: `${path} was not read: it is ${kindOf(s)}` };
      const stat = { dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
      const picked = range(stat);
      const stop = picked ? Math.min(picked.end, s.size) : 0;
      const wanted = picked ? Math.max(0, stop - picked.start) : 0;
      // Cut short by the budget, the last bytes of the range are kept (a log's newest).
      const length = Math.min(wanted, budget.bytesLeft());
      const start = stop - length;
      const buf = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await handle.read(buf, done, length - done, start + done);
        if (bytesRead === 0) break;
        done += bytesRead;
        budget.charge(bytesRead);
      }
      const short = length < wanted
        ? `${path}: read the last ${length} of ${wanted} bytes: the turn's ${budget.limits.bytes}-byte budget was used up`
        : null;
      return { ok: true, bytes: buf.subarray(0, done), start, stat, short };
    } catch (err) {
      const code = errCode(err);
      return { ok: false, why: `${path} was not read: ${code}`, code };
    } finally {
      await handle.close().catch(() => {});
    }
  })();
  const result = await withinMs(work, budget.msLeft());
  if (result === "timeout") {
    return {
      ok: false,
      why: `${path} was not read: the turn's ${budget.limits.ms} ms budget ran out`,
    };
  }
  return result;
}

/**
 * Reads a regular file from its start (a `scan`/`explain` input), at most its first
 * `maxBytes`; `cut` says the file was longer. Throws an Error with a one-line reason when
 * the file cannot be read (not a regular file, a link, leased, missing).
 */
export async function readWholeFile(
  path: string,
  maxBytes: number,
  ms: number = 60_000,
): Promise<{ text: string; cut: boolean }> {
  const budget = new ReadBudget({ files: 1, bytes: maxBytes, ms });
  const read = await readBounded(
    path,
    (s) => ({ start: 0, end: Math.min(s.size, maxBytes) }),
    budget,
  );
  if (!read.ok) {
    const reason = read.why.slice(read.why.indexOf(" was not read: ") + 15);
    throw Object.assign(new Error(reason), { code: read.code });
  }
  return { text: new TextDecoder().decode(read.bytes), cut: read.stat.size > maxBytes };
}

/**
 * Reads standard input to its end, at most `maxBytes` of it (the rest is left unread);
 * `cut` says there was more.
 */
export async function readStdin(maxBytes: number): Promise<{ text: string; cut: boolean }> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let cut = false;
  for await (const chunk of process.stdin as AsyncIterable<Uint8Array>) {
    const room = maxBytes - total;
    if (chunk.length > room) {
      chunks.push(chunk.subarray(0, room));
      total += room;
      cut = true;
      break;
    }
    chunks.push(chunk);
    total += chunk.length;
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) all.set(c, at), at += c.length;
  return { text: new TextDecoder().decode(all), cut };
}
