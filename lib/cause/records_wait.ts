/**
 * Waiting for a turn's end in its session records: an agent writes a turn's last records
 * when it can (Claude Code flushes its transcript after it answered; codex writes its
 * rollout from a background task), later still on a loaded machine. When the profile's
 * readers show where a turn ends (`endsTurn`, lib/plugin/api.ts), the records are read
 * again and again until that end is there — at once when it already is — for at most the
 * profile's `records_wait_ms`; never a fixed window. The clock and the reads are passed in,
 * so the waiting is tested with a fake clock and fake files.
 */
import type { LoadedRecordReader } from "../plugin/api.ts";
import { type PluginLedger, withPluginBudget } from "../plugin/budget.ts";
import { readRecordEvents, turnSpan } from "./record_evidence.ts";
import type { RecordsRead } from "./session_records.ts";

/**
 * The default bound of the wait for a turn's end record (`records_wait_ms`): past every lag
 * recorded in the corpus (docs/AGENTS.md: at most about a second, Claude Code's transcript
 * and qwen-code's late records) several times over, and short enough that a turn whose end
 * never comes is answered within seconds.
 */
export const DEFAULT_WAIT_MS = 3000;

/**
 * After the bound, the records are still watched this long for the end (the journal then
 * gets a revised Outcome): a machine loaded far past the bound.
 */
export const LATE_WATCH_MS = 30_000;
/** The pause between reads of that late watch: nobody waits on it. */
export const LATE_POLL_MS = 500;

/** The pauses between reads: short first (most ends land within milliseconds), then even. */
const POLL_STEPS_MS = [10, 20, 40, 80];
/** The pause between reads once the first steps are taken. */
export const POLL_MS = 100;

/** What the wait needs from the world. */
export interface RecordsWaitIo {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** One read of the turn's records (snapshot → now). */
  read(): Promise<RecordsRead>;
  /** True once nothing more can land (the agent exited): one last read, then no more. */
  done?(): boolean;
}

/** The turn's part of a read of its records (see `turnSpan` in record_evidence.ts). */
export interface TurnRecords {
  /** The read, without what a later turn wrote (from the prompt after the turn's own). */
  read: RecordsRead;
  /** Prompts the turn's part holds, at most its own place `nth`. */
  prompts: number;
  /** Its end is there. */
  ended: boolean;
}

/** What the wait found: the turn's records as last read, and how long it took. */
export interface RecordsWaited extends TurnRecords {
  waitedMs: number;
}

/**
 * The turn's part of a read: `nth` is the place of its prompt among the prompts read (1
 * unless earlier turns' prompts landed after it began), the readers are the profile's; their
 * calls are charged to `plugins`, the turn's budget (every read of a wait is one turn's).
 */
export function turnRecords(
  read: RecordsRead,
  readers: readonly LoadedRecordReader[],
  nth = 1,
  plugins?: PluginLedger,
): TurnRecords {
  const events = withPluginBudget(() => readRecordEvents(read.records, readers, []), plugins);
  const span = turnSpan(events, nth);
  if (span.cut === null) return { read, prompts: span.prompts, ended: span.ended };
  const next = events[span.cut];
  const at = read.records.findIndex((r) => r.path === next.path && r.offset === next.offset);
  const records = at === -1 ? read.records : read.records.slice(0, at);
  return { read: { ...read, records }, prompts: span.prompts, ended: span.ended };
}

/** Whether any of the profile's readers shows where a turn ends. */
export function readersShowEnd(readers: readonly LoadedRecordReader[]): boolean {
  return readers.some((r) => r.endsTurn === true);
}

/**
 * Reads the turn's records (`look` finds its part of each read) until its end is there,
 * or `boundMs` passed, or `io.done()` (after one last read). Returns at once when the first
 * read holds the end.
 */
export async function waitForEnd(
  io: RecordsWaitIo,
  look: (read: RecordsRead) => TurnRecords,
  boundMs: number,
  pollMs: number = POLL_MS,
): Promise<RecordsWaited> {
  const start = io.now();
  for (let step = 0;; step++) {
    const last = io.done?.() === true;
    const turn = look(await io.read());
    const waitedMs = io.now() - start;
    const left = boundMs - waitedMs;
    if (turn.ended || last || left <= 0) return { ...turn, waitedMs };
    await io.sleep(Math.min(POLL_STEPS_MS[step] ?? pollMs, left));
  }
}
