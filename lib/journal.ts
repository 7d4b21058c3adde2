/**
 * The outcome journal: one JSON line per turn event, appended by `turnguard run` and
 * `turnguard proxy` (through lib/proxy_journal.ts), read by `turnguard wait`, `log` and
 * `retry`. The record schema is
 * defined once here; the writer makes one write per record (regular-file O_APPEND writes
 * do not interleave), rotates by size under a lock, and the reader follows rotated files in
 * order and skips torn or corrupt lines with a diagnostic.
 */
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import * as v from "valibot";
import { errCode } from "./logfs.ts";
import { OutcomeSchema } from "./outcome.ts";

/**
 * The turnguard process that owns a turn, and who that pid was: `turnguard retry` signals
 * it, `turnguard wait` checks that it still runs.
 */
export const OwnerSchema = v.object({
  pid: v.number(),
  /**
   * The owner's start time (Linux: field 22 of /proc/PID/stat), so that a later process
   * that reuses the pid is not taken for the owner. Absent where it cannot be read.
   */
  pidStart: v.optional(v.string()),
  /**
   * Where `pid` is valid: the host's boot id and the pid namespace. A reader elsewhere
   * (another host or container) does not look the pid up. Absent where it cannot be read.
   */
  pidSpace: v.optional(v.string()),
});
/** The owner of a turn as recorded (derived from OwnerSchema). */
export type Owner = v.InferOutput<typeof OwnerSchema>;

/** Fields every record carries: when, whose, which turn, and the owning process. */
const CommonEntries = {
  /** ISO time the record was written. */
  ts: v.string(),
  /** The human label of the session (`--name`, else the agent profile's name). */
  name: v.string(),
  session: v.string(),
  turn: v.number(),
  ...OwnerSchema.entries,
};

/** Why a retry decision is final. */
export const SettledWhySchema = v.picklist([
  "succeeded",
  "stopped",
  "off",
  "not_retryable",
  "exhausted",
]);
/** Why a retry decision is final (derived from SettledWhySchema). */
export type SettledWhy = v.InferOutput<typeof SettledWhySchema>;

/** A turn began: the client's prompt (proxy) or the command (run) was started. */
export const TurnStartedSchema = v.object({
  ...CommonEntries,
  event: v.literal("turn_started"),
  mode: v.picklist(["run", "proxy"]),
  agent: v.string(),
  /** The JSON-RPC id of the client's `session/prompt` (proxy); null in run mode. */
  promptId: v.nullable(v.union([v.string(), v.number()])),
});

/** One attempt of a turn ended; `attempt` is 0 for the first try, k for the k-th retry. */
export const TurnEndedSchema = v.object({
  ...CommonEntries,
  event: v.literal("turn_ended"),
  attempt: v.number(),
  outcome: OutcomeSchema,
  /** The outcome's `reply.text` was cut to its first JOURNAL_REPLY_BYTES bytes. */
  replyTruncated: v.optional(v.literal(true)),
});

/** Retry number `attempt` (of `of`) waits until `nextAt`; written before the failed end. */
export const RetryScheduledSchema = v.object({
  ...CommonEntries,
  event: v.literal("retry_scheduled"),
  attempt: v.number(),
  of: v.number(),
  afterMs: v.number(),
  nextAt: v.string(),
  /** What the retry waits out: `capacity`, `rate limit`, `network`, `quota`. */
  reason: v.string(),
});

/** Retry number `attempt` began running. */
export const RetryStartedSchema = v.object({
  ...CommonEntries,
  event: v.literal("retry_started"),
  attempt: v.number(),
  of: v.number(),
});

/**
 * The retry decision is final. `attempt` is the last attempt that ran (0 for the first
 * try); written before that attempt's end, or when a waiting retry is stopped.
 */
export const RetrySettledSchema = v.object({
  ...CommonEntries,
  event: v.literal("retry_settled"),
  attempt: v.number(),
  of: v.number(),
  why: SettledWhySchema,
  /** A readable reason: `auth: not retryable`, `retries are off`, `2 of 2 retries used`. */
  reason: v.string(),
});

/** One journal line. */
export const JournalRecordSchema = v.variant("event", [
  TurnStartedSchema,
  TurnEndedSchema,
  RetryScheduledSchema,
  RetryStartedSchema,
  RetrySettledSchema,
]);
/** One journal line (derived from JournalRecordSchema). */
export type JournalRecord = v.InferOutput<typeof JournalRecordSchema>;
/** A `turn_started` record (derived from TurnStartedSchema). */
export type TurnStarted = v.InferOutput<typeof TurnStartedSchema>;
/** A `turn_ended` record (derived from TurnEndedSchema). */
export type TurnEnded = v.InferOutput<typeof TurnEndedSchema>;
/** A `retry_scheduled` record (derived from RetryScheduledSchema). */
export type RetryScheduled = v.InferOutput<typeof RetryScheduledSchema>;
/** A `retry_started` record (derived from RetryStartedSchema). */
export type RetryStarted = v.InferOutput<typeof RetryStartedSchema>;
/** A `retry_settled` record (derived from RetrySettledSchema). */
export type RetrySettled = v.InferOutput<typeof RetrySettledSchema>;

/** Every line starts with this; a record glued behind a torn line is found by it. */
const RECORD_START = '{"ts":"';

/**
 * A journaled reply keeps at most its first this many bytes, so one record stays small
 * whatever the agent printed (the Outcome given to the caller keeps its own text).
 */
export const JOURNAL_REPLY_BYTES = 64 * 1024;

/** Rotate the journal once it reaches this size. */
export const ROTATE_BYTES = 8 * 1024 * 1024;
/** Rotated files kept besides the live one. */
export const ROTATE_KEEP = 3;
/** A rotation lock older than this was left by a process that died; it is broken. */
const STALE_LOCK_MS = 30_000;

/**
 * The journal's path: `--journal`, else `$TURNGUARD_JOURNAL`, else
 * `$XDG_STATE_HOME/turnguard/journal.jsonl` (`~/.local/state` when unset or relative).
 */
export function journalPath(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  cwd: string,
): string {
  const given = flag ?? env.TURNGUARD_JOURNAL;
  if (given !== undefined && given !== "") return resolve(cwd, given);
  const xdg = env.XDG_STATE_HOME;
  const state = xdg && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), ".local", "state");
  return join(state, "turnguard", "journal.jsonl");
}

/** Serializes a record as one line, `ts` first so a glued record can be found again. */
export function formatRecord(record: JournalRecord): string {
  const { ts, ...rest } = v.parse(JournalRecordSchema, record);
  return JSON.stringify({ ts, ...rest }) + "\n";
}

/** A parsed line: the record, or why it was skipped. */
export type ParsedLine = { record: JournalRecord } | { error: string };

/** Parses one line (without its newline) into a record. */
export function parseRecordLine(line: string): ParsedLine {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    return { error: `not JSON (${(err as Error).message.split("\n")[0]})` };
  }
  const result = v.safeParse(JournalRecordSchema, raw);
  if (result.success) return { record: result.output };
  const issue = result.issues[0];
  const path = (issue.path ?? []).map((p) => String(p.key)).join(".");
  return { error: `not a journal record (${path ? `${path}: ` : ""}${issue.message})` };
}

/**
 * Parses one line, recovering records glued behind a torn one: a write cut short leaves a
 * line without its newline, and the next record lands on the same line.
 */
export function parseLineRecovering(
  line: string,
): { records: JournalRecord[]; error: string | null } {
  const whole = parseRecordLine(line);
  if ("record" in whole) return { records: [whole.record], error: null };
  for (let at = line.indexOf(RECORD_START, 1); at !== -1; at = line.indexOf(RECORD_START, at + 1)) {
    const rest = parseLineRecovering(line.slice(at));
    if (rest.records.length > 0) {
      return {
        records: rest.records,
        error: `skipped a torn record (the record glued behind it at column ${at + 1} was kept)`,
      };
    }
  }
  return { records: [], error: `skipped a corrupt line: ${whole.error}` };
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
    if (!this.#dirReady) {
      mkdirSync(dirname(this.path), { recursive: true });
      this.#dirReady = true;
    }
    const fd = openSync(this.path, "a");
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

/** The rotated files of a journal, oldest (lowest number) first. */
export function rotatedFiles(path: string): { n: number; path: string }[] {
  const base = basename(path);
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return [];
  }
  const out: { n: number; path: string }[] = [];
  for (const name of names) {
    if (!name.startsWith(base + ".")) continue;
    const suffix = name.slice(base.length + 1);
    if (/^[1-9]\d*$/.test(suffix)) out.push({ n: Number(suffix), path: join(dirname(path), name) });
  }
  return out.sort((a, b) => a.n - b.n);
}

/** The journal's files in reading order: rotated ones oldest first, then the live one. */
export function journalFiles(path: string): string[] {
  return [...rotatedFiles(path).map((f) => f.path), path];
}

/** What one read of the journal brought. */
export interface JournalRead {
  /** New records in journal order. */
  records: JournalRecord[];
  /** Skipped lines, named by file and line. */
  diagnostics: string[];
  /** The files changed under the reader (truncated, replaced): `records` is everything. */
  reset: boolean;
}

interface FileCursor {
  ino: number;
  offset: number;
  /** Bytes after the last newline: a write in progress, or a torn line. */
  partial: Uint8Array;
  line: number;
  path: string;
  /** The file's first bytes: a file that reuses a deleted file's inode number differs here. */
  head: Uint8Array;
}

/** A journal file as one listing saw it. */
interface Listed {
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
const HEAD_BYTES = 256;
/** Passes tried in one `read()` while rotations keep racing it; then it returns nothing new. */
const MAX_PASSES = 100;

/** The journal's files in reading order, with their inodes; files gone meanwhile are left out. */
function listFiles(path: string): Listed[] {
  const out: Listed[] = [];
  for (const file of journalFiles(path)) {
    try {
      out.push({ path: file, ino: statSync(file).ino });
    } catch { /* removed since listed: a later listing will differ */ }
  }
  return out;
}

function sameListing(a: readonly Listed[], b: readonly Listed[]): boolean {
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

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Lines cut short at the end of a rotated file: no write will complete them, so they are
   * torn. (The live file's trailing partial line is a write in progress, held back.)
   */
  tornTails(): string[] {
    return [...this.#cursors.values()]
      .filter((c) => c.partial.length > 0 && c.path !== this.path)
      .map((c) => `journal ${c.path}:${c.line + 1}: skipped a torn last line`);
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
    return { records: [], diagnostics: [], reset };
  }

  /** One pass over the files; a failure when it cannot be kept. */
  #pass(): Omit<JournalRead, "reset"> | PassFailure {
    const records: JournalRecord[] = [];
    const diagnostics: string[] = [];
    const listed = listFiles(this.path);
    for (const { path, ino } of listed) {
      let fd: number;
      try {
        fd = openSync(path, "r");
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
          this.#consume(cursor, buf.subarray(0, n), records, diagnostics);
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
    return { records, diagnostics };
  }

  /** Whether the open file is the one the cursor was reading: as long, and the same start. */
  #sameFile(fd: number, size: number, cursor: FileCursor): boolean {
    if (size < cursor.offset) return false;
    if (cursor.head.length === 0) return true;
    const head = new Uint8Array(cursor.head.length);
    const n = readSync(fd, head, 0, head.length, 0);
    return n === head.length && sameBytes(head, cursor.head);
  }

  #consume(
    cursor: FileCursor,
    bytes: Uint8Array,
    records: JournalRecord[],
    diagnostics: string[],
  ): void {
    let data = bytes;
    if (cursor.partial.length > 0) {
      data = new Uint8Array(cursor.partial.length + bytes.length);
      data.set(cursor.partial);
      data.set(bytes, cursor.partial.length);
    }
    const decoder = new TextDecoder();
    let start = 0;
    for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10, start)) {
      cursor.line++;
      const line = decoder.decode(data.subarray(start, nl)).replace(/\r$/, "");
      start = nl + 1;
      if (line.trim() === "") continue;
      const parsed = parseLineRecovering(line);
      records.push(...parsed.records);
      if (parsed.error) {
        diagnostics.push(`journal ${cursor.path}:${cursor.line}: ${parsed.error}`);
      }
    }
    cursor.partial = data.slice(start);
  }
}

/** Reads the whole journal once. */
export function readJournal(path: string): JournalRead {
  const reader = new JournalReader(path);
  const read = reader.read();
  return { ...read, diagnostics: [...read.diagnostics, ...reader.tornTails()] };
}
