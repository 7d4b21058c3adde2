/**
 * The byte relay: splits one direction's chunks into lines, lets each complete line be
 * looked at, and forwards the bytes, untouched lines as views of the chunk (a chunk costs
 * one or two writes, not one per line). What a look decides about a line is a Verdict.
 */
import { Buffer } from "node:buffer";
import { errorText } from "../errors.ts";
import type { LineSink } from "../io/output.ts";
import { type LineLook, type LineSplitter, plainView, type Segment } from "../acp/lines.ts";
import type { LineOutput } from "./output.ts";

/**
 * What to do with one complete line: pass it (null), replace it (null bytes: drop it), or
 * put what a later step gives in its place (output order is kept).
 */
export type Verdict =
  | null
  | { replace: Uint8Array | null }
  | { later: Promise<Uint8Array | null> };

/** The line passes as it is. */
export const PASS: Verdict = null;
/** The line is dropped. */
export const DROP: Verdict = { replace: null };

/** Whether `needle` occurs in `line` (a cheap look before a line is parsed). */
export function hasBytes(line: Uint8Array, needle: Uint8Array): boolean {
  const bytes = Buffer.isBuffer(line)
    ? line
    : Buffer.from(line.buffer, line.byteOffset, line.length);
  return bytes.indexOf(needle) !== -1;
}

/**
 * Whether `needle` occurs in `bytes[start, end)`, looked for byte by byte without making a
 * view (a view costs an allocation): for short lines, where that is cheaper than a native
 * search.
 */
export function hasBytesIn(
  bytes: Uint8Array,
  start: number,
  end: number,
  needle: Uint8Array,
): boolean {
  const first = needle[0];
  const last = end - needle.length;
  outer: for (let i = start; i <= last; i++) {
    if (bytes[i] !== first) continue;
    for (let j = 1; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * A source paused while any of its reasons holds: the output it feeds is full, or
 * turnguard's own answers to it (a request refused past the in-flight cap) pile up in the
 * output back to it, because it floods requests and does not read (LineOutput's
 * `onOwnPressure`).
 */
export class SourceHold {
  #full = new Set<string>();
  constructor(readonly source: { pause(): void; resume(): void }) {}

  /** Reason `which` holds (`full`) or no longer does; `mayResume` false keeps it paused. */
  set(which: string, full: boolean, mayResume = true): void {
    const wasHeld = this.#full.size > 0;
    if (full) this.#full.add(which);
    else this.#full.delete(which);
    const held = this.#full.size > 0;
    if (held && !wasHeld) this.source.pause();
    else if (!held && wasHeld && mayResume) this.source.resume();
  }
}

/**
 * The last resort around reading a line: whatever it throws (a bug, a runtime limit the
 * bounds missed), the line still passes and the proxy goes on; the failure is said on
 * stderr once.
 */
export class Guard {
  #failed = false;
  /** `stderr`: where turnguard's own lines go (lib/io/output.ts `lineSink`: made safe there). */
  constructor(readonly stderr: Pick<LineSink, "line">) {}

  /** `read()`, or `fallback` when it throws. */
  run<T>(what: string, read: () => T, fallback: T): T {
    try {
      return read();
    } catch (err) {
      this.failed(what, err);
      return fallback;
    }
  }

  /** Says once on stderr that reading `what` failed. */
  failed(what: string, err: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.stderr.line(
      `turnguard: reading ${what} failed (${errorText(err)}); it passed through unread`,
    );
  }
}

/** How one direction's lines are looked at. */
export interface LineReader {
  /** A complete line (within the inspection limit). */
  line(line: Uint8Array): Verdict;
  /** A piece of a line too long to inspect, while it passes. */
  passing?(piece: Uint8Array, end: boolean): void;
  /**
   * A line, `bytes[start, end)`, looked at before a view of it is made: true when it passes
   * as it is, false to have it read whole by `line`. `bytes` is the chunk, or a scratch copy
   * of a line that spanned chunks (lib/acp/lines.ts LineLook): nothing of it may be kept.
   */
  quick?(bytes: Uint8Array, start: number, end: number): boolean;
  /**
   * Whole lines of the chunk at once, `bytes[start, end)`: true when every one of them
   * passes as it is and `line`/`quick` would have learnt nothing from them (a flood of lines
   * no one needs to look at costs one search, not a call per line).
   */
  skim?(bytes: Uint8Array, start: number, end: number): boolean;
}

/** Splits a chunk and forwards it, each complete line as its reader decides. */
export function pump(
  splitter: LineSplitter,
  chunk: Uint8Array,
  out: LineOutput,
  reader: LineReader,
  guard: Guard,
): void {
  // The splitter looks at this very view: a look's `bytes` is the chunk or a scratch copy.
  chunk = plainView(chunk);
  // Pieces to write, and the current run of adjacent bytes of this chunk (kept as
  // offsets until it is cut: adjacent bytes of the chunk are in their order).
  const pieces: Uint8Array[] = [];
  let inRun = false;
  let runStart = 0;
  let runEnd = 0;
  const cutRun = () => {
    if (!inRun) return;
    pieces.push(chunk.subarray(runStart, runEnd));
    inRun = false;
  };
  const addRun = (at: number, length: number) => {
    if (inRun && runEnd === at) {
      runEnd += length;
    } else {
      cutRun();
      inRun = true;
      runStart = at;
      runEnd = at + length;
    }
  };
  const flush = () => {
    cutRun();
    if (pieces.length === 0) return;
    if (pieces.length === 1) out.write(pieces[0]);
    else out.writeParts(pieces);
    pieces.length = 0;
  };
  const passing = reader.passing;
  const quick = reader.quick;
  const skim = reader.skim;
  splitter.push(
    chunk,
    (segment) => {
      if (segment.kind === "seen") {
        if (segment.at === -1) cutRun(), pieces.push(segment.bytes);
        else addRun(segment.at, segment.bytes.length);
        return;
      }
      if (segment.kind === "pass" && passing) {
        guard.run("a long line", () => passing.call(reader, segment.bytes, segment.end), undefined);
      }
      const verdict = segment.kind === "line"
        ? guard.run("a line", () => reader.line(segment.bytes), PASS)
        : PASS;
      if (verdict === null) {
        if (segment.at === -1) {
          cutRun();
          pieces.push(segment.bytes);
        } else {
          addRun(segment.at, segment.bytes.length);
        }
        return;
      }
      flush();
      apply(verdict, out);
    },
    // A line of this chunk joins its run; a line that spanned chunks comes as "seen". A
    // look that throws passes the line (quick) or has the lines looked at one by one (skim).
    quick && guarded(reader, quick, guard, true, (bytes, start, end) => {
      if (bytes === chunk) addRun(start, end - start);
    }),
    skim && guarded(reader, skim, guard, false, (_, start, end) => addRun(start, end - start)),
  );
  flush();
}

/**
 * A reader's look as the splitter calls it: `passed` told of the lines it passed, and what it
 * throws said once on stderr and taken as `onThrow`.
 */
function guarded(
  reader: LineReader,
  look: (bytes: Uint8Array, start: number, end: number) => boolean,
  guard: Guard,
  onThrow: boolean,
  passed: (bytes: Uint8Array, start: number, end: number) => void,
): LineLook {
  return (bytes, start, end) => {
    let ok: boolean;
    try {
      ok = look.call(reader, bytes, start, end);
    } catch (err) {
      guard.failed("a line", err);
      ok = onThrow;
    }
    if (ok) passed(bytes, start, end);
    return ok;
  };
}

/** Forwards what is left when a stream ends (the splitter's last segments). */
export function drain(
  splitter: LineSplitter,
  out: LineOutput,
  reader: LineReader,
  guard: Guard,
): void {
  splitter.end((segment: Segment) => {
    const verdict = segment.kind === "line"
      ? guard.run("a line", () => reader.line(segment.bytes), PASS)
      : PASS;
    if (verdict === null) out.write(segment.bytes);
    else apply(verdict, out);
  });
}

function apply(verdict: Exclude<Verdict, null>, out: LineOutput): void {
  if ("later" in verdict) out.writeLater(verdict.later);
  else if (verdict.replace) out.write(verdict.replace);
}
