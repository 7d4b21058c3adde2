/**
 * Follows a running turn's evidence as it grows: every `pollMs` it reads what the profile's
 * logs and the session's record files gained since its last look (the scan of
 * lib/cause/scan.ts from a snapshot it moves forward, through the bounded reader: no
 * blocking read, a budget of files, bytes and time per look), keeps whole lines only, and
 * hands them to the pure `attemptsIn` (lib/cause/agent_attempts.ts). Each failed attempt
 * the agent made is told to `onAttempt` as it is seen. The timer is behind `Ticker`.
 */
import { errorText } from "../errors.ts";
import { ReadBudget, type ReadLimits } from "../io/bounded_read.ts";
import { type LogFs, nodeLogFs } from "../io/logfs.ts";
import type { AgentAttempt } from "../core/outcome.ts";
import type { LoadedRecordReader } from "../plugin/api.ts";
import { pluginLedger } from "../plugin/budget.ts";
import { LoopTurn } from "../io/loop_turn.ts";
import { attemptsIn, ownLines } from "./agent_attempts.ts";
import { type LogLine, splitLines } from "./attribution.ts";
import type { Classifier } from "./classifier.ts";
import { type AppendedChunk, scanAppended } from "./scan.ts";
import { namedSession, parseRecordLines, type SessionRecord } from "./session_records.ts";
import type { Snapshot } from "./snapshot.ts";

/** How often a running turn's evidence is looked at, by default (ms). */
export const DEFAULT_FOLLOW_POLL_MS = 1000;

/**
 * What one look may read: 64 files, 1 MiB, and a time a look never exceeds (the next one
 * waits for it). A turn's attempts are a line or a record each.
 */
export const FOLLOW_READ_LIMITS: ReadLimits = { files: 64, bytes: 1024 * 1024, ms: 1000 };

/**
 * Most attempts one look tells (each is a journal record and a `--verbose` line): an agent
 * that logs thousands of failures a second is told as the first of them, the newest one not
 * retryable (what `--fail-fast` weighs) and the newest; `n` still counts every one.
 */
export const MAX_TOLD_PER_LOOK = 16;

/**
 * Lines or records classified between two checks of the event loop's share: a look reads up
 * to 1 MiB, thousands of lines each tried against every anchor (250–850 ms of the relay's
 * thread in one piece, measured with the built-in packs), so it lets the event loop turn
 * every 10 ms (lib/io/loop_turn.ts) and stops at the look's time budget.
 */
const CLASSIFY_SLICE = 32;

/** Most distinct diagnostics one follower tells (a file it cannot read is told once). */
const MAX_DIAGNOSTICS = 20;

/** A repeating timer: `every` starts it, the function it returns stops it. */
export interface Ticker {
  every(ms: number, tick: () => void): () => void;
}

/** The runtime's timers (unref'd: a follower never keeps turnguard alive). */
export const realTicker: Ticker = {
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    (timer as { unref?: () => void }).unref?.();
    return () => clearInterval(timer);
  },
};

/** What a follower follows and how it reads it. */
export interface FollowOptions {
  /** The profile's logs as they were when the turn started (null: it names none). */
  logs: Snapshot | null;
  logFormat: "plain" | "glog";
  /** The session's record files as they were when the turn started (null: none). */
  records: { sessionId: string; snapshot: Snapshot } | null;
  startedAt: number;
  classifier: Classifier;
  readers: readonly LoadedRecordReader[];
  /** The agent's pid (glog attribution). */
  pid: () => number | null;
  onAttempt: (attempt: AgentAttempt) => void;
  /** Told once of each distinct problem met while following (a file it cannot read). */
  onDiagnostic?: (line: string) => void;
  pollMs?: number;
  fs?: LogFs;
  now?: () => number;
  limits?: ReadLimits;
}

/** One file set followed: its moving snapshot, and where each file's whole lines end. */
class Tail {
  readonly #snapshot: Snapshot;

  constructor(taken: Snapshot) {
    this.#snapshot = { ...taken, files: new Map(taken.files), diagnostics: [] };
  }

  /**
   * The whole lines the files gained since the last look, oldest file first, and moves
   * past them (a line still being written is read again next time).
   */
  async gained(
    startedAt: number,
    budget: ReadBudget,
    fs: LogFs,
    diagnostics: string[],
  ): Promise<{ path: string; offset: number; text: string }[]> {
    const scan = await scanAppended(this.#snapshot, startedAt, budget, fs);
    diagnostics.push(...scan.diagnostics.filter((d) => !d.includes("does not exist")));
    // A file gone for good is forgotten (not searched for again on every look); a renamed
    // one is followed under its new name from where its old name's lines ended.
    for (const path of scan.vanished ?? []) this.#snapshot.files.delete(path);
    const out: { path: string; offset: number; text: string }[] = [];
    for (const chunk of [...scan.chunks].reverse()) {
      const whole = this.#whole(chunk);
      if (whole) out.push(whole);
    }
    return out;
  }

  #whole(chunk: AppendedChunk): { path: string; offset: number; text: string } | null {
    const files = this.#snapshot.files;
    if (chunk.movedFrom !== undefined && files.has(chunk.movedFrom)) {
      files.set(chunk.path, files.get(chunk.movedFrom)!);
      files.delete(chunk.movedFrom);
    }
    const before = files.get(chunk.path);
    const from = chunk.reason === "grew" || chunk.reason === "moved" ? before?.size ?? 0 : 0;
    let text = chunk.text;
    let offset = chunk.offset;
    // The read window started past where the last look ended: its first line is cut.
    if (offset > from) {
      const nl = text.indexOf("\n");
      if (nl === -1) return null;
      offset += utf8(text.slice(0, nl + 1));
      text = text.slice(nl + 1);
    }
    const last = text.lastIndexOf("\n");
    if (last === -1 || !chunk.file) return null;
    text = text.slice(0, last + 1);
    this.#snapshot.files.set(chunk.path, { ...chunk.file, size: offset + utf8(text) });
    return { path: chunk.path, offset, text };
  }
}

const encoder = new TextEncoder();
function utf8(text: string): number {
  return encoder.encode(text).length;
}

/** Follows one turn's logs and records while it runs. */
export class AttemptFollower {
  readonly #opts: FollowOptions;
  readonly #logs: Tail | null;
  readonly #records: Tail | null;
  #seen = 0;
  readonly #diagnostics = new Set<string>();
  #stopTicker: (() => void) | null = null;
  #looking: Promise<void> | null = null;
  #stopped = false;
  /** The turn's plugin budget: a plugin that loops is stopped once per turn, not per look. */
  readonly #plugins = pluginLedger();

  constructor(opts: FollowOptions) {
    this.#opts = opts;
    this.#logs = opts.logs && opts.logs.patterns.length > 0 ? new Tail(opts.logs) : null;
    this.#records = opts.records && opts.records.snapshot.patterns.length > 0
      ? new Tail(opts.records.snapshot)
      : null;
  }

  /** Whether there is anything to follow (the profile names logs or session records). */
  get following(): boolean {
    return this.#logs !== null || this.#records !== null;
  }

  /** How many attempts were seen so far. */
  get seen(): number {
    return this.#seen;
  }

  /** Starts looking every `pollMs`; a look still running is not started again. */
  start(ticker: Ticker = realTicker): this {
    if (!this.following || this.#stopTicker) return this;
    this.#stopTicker = ticker.every(this.#opts.pollMs ?? DEFAULT_FOLLOW_POLL_MS, () => {
      if (!this.#looking) void this.look();
    });
    return this;
  }

  /** Stops following; a look under way finishes, but tells no more attempts. */
  stop(): void {
    this.#stopped = true;
    this.#stopTicker?.();
    this.#stopTicker = null;
  }

  /** One look: reads what the files gained and tells each new attempt. Never throws. */
  look(): Promise<void> {
    if (this.#looking) return this.#looking;
    this.#looking = this.#look().catch((err) => this.#note(`following: ${errorText(err)}`))
      .finally(() => this.#looking = null);
    return this.#looking;
  }

  async #look(): Promise<void> {
    const o = this.#opts;
    const fs = o.fs ?? nodeLogFs;
    const budget = new ReadBudget(o.limits ?? FOLLOW_READ_LIMITS, o.now);
    const diagnostics: string[] = [];
    const lines: LogLine[] = [];
    for (const c of await this.#logs?.gained(o.startedAt, budget, fs, diagnostics) ?? []) {
      lines.push(...splitLines(c.path, c.offset, c.text));
    }
    const records: SessionRecord[] = [];
    for (const c of await this.#records?.gained(o.startedAt, budget, fs, diagnostics) ?? []) {
      const parsed = parseRecordLines(c.path, c.offset, c.text, false);
      const sessionId = o.records!.sessionId;
      const foreign = parsed.records.some((r) => {
        const id = namedSession(r.record);
        return id !== null && id !== sessionId;
      });
      if (!foreign) records.push(...parsed.records);
    }
    if (this.#stopped || (lines.length === 0 && records.length === 0)) {
      return diagnostics.forEach((d) => this.#note(d));
    }
    const found: AgentAttempt[] = [];
    const pid = o.pid();
    // The agent's own lines, attributed over the whole look (a slice alone may hold no line
    // of its pid); the slices are then classified as plain lines.
    const own = ownLines(lines, { logFormat: o.logFormat, pid });
    const ctx = {
      classifier: o.classifier,
      readers: o.readers,
      logFormat: "plain" as const,
      pid,
      now: (o.now ?? Date.now)(),
      plugins: this.#plugins,
    };
    const loop = new LoopTurn();
    const slices = [
      ...sliced(own).map((l) => ({ lines: l, records: [] })),
      ...sliced(records).map((r) => ({ lines: [], records: r })),
    ];
    for (const [i, evidence] of slices.entries()) {
      if (loop.due()) await loop.yield();
      if (this.#stopped) return;
      if (budget.msLeft() === 0) {
        diagnostics.push(
          `the look's ${budget.limits.ms} ms budget ran out: ${
            slices.length - i
          } of ${slices.length} slices of what the files gained were not read for attempts`,
        );
        break;
      }
      found.push(
        ...attemptsIn(evidence, { ...ctx, seen: this.#seen + found.length }, diagnostics),
      );
    }
    diagnostics.forEach((d) => this.#note(d));
    this.#seen += found.length;
    const told = toldOf(found);
    if (told.length < found.length) {
      this.#note(
        `more than ${MAX_TOLD_PER_LOOK} failed attempts in one look: some are counted, not told`,
      );
    }
    for (const attempt of told) o.onAttempt(attempt);
  }

  #note(line: string): void {
    if (this.#diagnostics.size >= MAX_DIAGNOSTICS || this.#diagnostics.has(line)) return;
    this.#diagnostics.add(line);
    this.#opts.onDiagnostic?.(line);
  }
}

/** The attempts of one look that are told (see MAX_TOLD_PER_LOOK), oldest first. */
export function toldOf(found: readonly AgentAttempt[]): AgentAttempt[] {
  if (found.length <= MAX_TOLD_PER_LOOK) return [...found];
  const told = found.slice(0, MAX_TOLD_PER_LOOK - 2);
  const rest = found.slice(MAX_TOLD_PER_LOOK - 2);
  const last = rest.at(-1)!;
  const permanent = rest.findLast((a) => !a.retryable);
  if (permanent && permanent !== last) told.push(permanent);
  told.push(last);
  return told;
}

/** `items` in slices of CLASSIFY_SLICE. */
function sliced<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CLASSIFY_SLICE) {
    out.push(items.slice(i, i + CLASSIFY_SLICE));
  }
  return out;
}
