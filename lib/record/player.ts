/**
 * The agent side of a recording, played back (`turnguard replay` runs it as the agent of a
 * real `turnguard proxy`): for each line the client sent (`c2a`) it waits for one line on
 * its stdin; each line the agent sent (`a2c`) it writes to stdout exactly as recorded;
 * recorded stderr goes to stderr; each file the agent wrote (`file`) is written under `home`
 * at its place in the sequence.
 *
 * A recording made write by write (header `files: "writes"`) is played so: each write is
 * appended (or the file rewritten) at its place between the ACP lines; a write the agent
 * made after it answered a prompt also as long after the last ACP line as it came in the
 * recording (times `lateFactor`, at most `maxDelayMs`), so it lands as late as it did — or
 * later, to play a loaded machine. Writes during a turn keep their order before the answer
 * and go at once. What the agent wrote after the client closed stdin is written after stdin
 * closes here, at once. An older recording holds each file once in its final state: it is
 * written at its place, with no delay (appending what grew, so readers that snapshot sizes
 * see the turn's bytes arrive).
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import * as v from "valibot";
import { stderrSink, stdoutSink } from "../io/output.ts";
import { RecordedFileSchema, STDIN_CLOSED, type Transcript } from "./transcript.ts";

/** How the player meets the world: the client's lines, its outputs, a clock. */
export interface PlayerIo {
  /** Resolves true when the next client line arrived, false when stdin closed first. */
  nextClientLine(): Promise<boolean>;
  stdinClosed(): Promise<void>;
  /** Whether stdin has closed. */
  isClosed(): boolean;
  writeOut(line: string): Promise<void>;
  writeErr(line: string): void;
  sleep(ms: number): Promise<void>;
  now(): number;
}

/** How late writes are played. */
export interface PlayerOptions {
  /** Where `$HOME/...` files are written; null: files are not written. */
  home: string | null;
  /** Late writes come this many times as late as recorded (1: as recorded). */
  lateFactor?: number;
  /** The longest a late write is held after the ACP line before it. */
  maxDelayMs?: number;
  /**
   * Play turns at recorded times (`replay --fail-fast`): while a prompt is unanswered, each
   * agent line, stderr line and file write comes as long after the client line before it
   * as in the recording, so a turn the agent spent retrying lasts as long and its records
   * grow as they did (the proxy's live evidence sees them); the rest (an agent's slow
   * start) goes at once. Once stdin closes, everything left goes at once.
   */
  recordedTimes?: boolean;
}

/** How often a wait at recorded times looks whether stdin closed. */
const PACE_STEP_MS = 100;

/** The default cap of a late write's delay: past every built-in wait for records. */
export const DEFAULT_MAX_DELAY_MS = 600;

/** The line as a JSON-RPC message's method and id, when it is one. */
function message(line: string): { method?: unknown; id?: unknown } {
  try {
    const m = JSON.parse(line);
    return typeof m === "object" && m !== null ? m : {};
  } catch {
    return {};
  }
}

/** Where a recorded `$HOME/...` path lands under `home`; null when it would leave it. */
export function homePath(home: string, recorded: string): string | null {
  const target = resolve(home, recorded.replace(/^\$HOME\/?/, ""));
  const rel = relative(home, target);
  return rel === "" || rel.startsWith("..") ? null : join(home, rel);
}

function writeFile(home: string, line: string, paced: boolean): void {
  const f = v.parse(RecordedFileSchema(), JSON.parse(line));
  const target = homePath(home, f.path);
  if (target === null) return;
  mkdirSync(dirname(target), { recursive: true });
  if (f.append) return appendFileSync(target, f.content);
  const old = existsSync(target) ? readFileSync(target, "utf8") : null;
  if (!paced && old !== null && f.content.startsWith(old)) {
    appendFileSync(target, f.content.slice(old.length));
  } else writeFileSync(target, f.content);
}

/** Plays the agent side of `transcript` to its end, then waits for stdin to close. */
export async function playAgentSide(
  { header, events }: Transcript,
  io: PlayerIo,
  opts: PlayerOptions,
): Promise<void> {
  const paced = header.files === "writes";
  const factor = opts.lateFactor ?? 1;
  const cap = opts.maxDelayMs ?? DEFAULT_MAX_DELAY_MS * factor;
  /** The recorded time of the last ACP event (or stdin's close), and when it was played. */
  let wire = { t: 0, at: io.now() };
  const mark = (t: number) => (wire = { t, at: io.now() });
  const prompts = new Set<unknown>();
  /** The agent answered a prompt and no new one came: its writes keep their delays. */
  let answered = false;
  /** The prompts not answered yet: only their turns are played at recorded times. */
  const open = new Set<unknown>();
  /** The recorded time of the last client line, and when it arrived. */
  let client = { t: 0, at: io.now() };
  for (const e of events) {
    if (opts.recordedTimes && open.size > 0 && e.dir !== "c2a" && e.dir !== "meta") {
      for (
        let due = e.t - client.t - (io.now() - client.at);
        due > 0 && !io.isClosed();
        due = e.t - client.t - (io.now() - client.at)
      ) await io.sleep(Math.min(due, PACE_STEP_MS));
    }
    if (e.dir === "c2a") {
      if (!(await io.nextClientLine())) break;
      mark(e.t);
      client = { t: e.t, at: io.now() };
      const m = message(e.line);
      if (m.method === "session/prompt") prompts.add(m.id), open.add(m.id), answered = false;
    } else if (e.dir === "a2c") {
      await io.writeOut(e.line);
      mark(e.t);
      const m = message(e.line);
      if (m.method === undefined && prompts.has(m.id)) answered = true, open.delete(m.id);
    } else if (e.dir === "stderr") {
      io.writeErr(e.line);
    } else if (e.dir === "meta" && e.line === STDIN_CLOSED && paced) {
      await io.stdinClosed();
      mark(e.t);
      answered = false; // no turn is left to read what comes now: no delay
    } else if (e.dir === "file" && opts.home !== null) {
      if (paced && answered && !opts.recordedTimes) {
        const due = Math.min((e.t - wire.t) * factor, cap) - (io.now() - wire.at);
        if (due > 0) await io.sleep(due);
      }
      writeFile(opts.home, e.line, paced);
    }
  }
  await io.stdinClosed();
}

/** The player's I/O on this process's stdin, stdout and stderr. */
export function processPlayerIo(): PlayerIo {
  let received = 0;
  let wanted = 0;
  let wake: (() => void) | null = null;
  let closed = false;
  process.stdin.on("data", (c: Buffer) => {
    for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) received++;
    wake?.();
  });
  process.stdin.on("end", () => {
    closed = true;
    wake?.();
  });
  return {
    nextClientLine: () => {
      wanted++;
      return new Promise((r) => {
        const check = () => {
          if (received >= wanted) return r(true);
          if (closed) return r(false);
          wake = check;
        };
        check();
      });
    },
    stdinClosed: () =>
      new Promise((r) => {
        const check = () => (closed ? r() : (wake = check));
        check();
      }),
    isClosed: () => closed,
    // The recorded agent's own lines, passed through unchanged (they are the agent's).
    writeOut: (line) => stdoutSink.passThrough.write(`${line}\n`),
    writeErr: (line) => void stderrSink.passThrough.write(`${line}\n`),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    now: () => Date.now(),
  };
}
