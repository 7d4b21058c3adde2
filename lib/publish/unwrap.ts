/**
 * Printed, not run: when an agent's final text is itself the publish command it should have
 * run (`buzz messages send --content "…"` in a fenced shell block, a here-document, or a
 * `printf '…' |` pipe), the fallback publishes the content it meant, not the command.
 * Recognised with the profile's own detectors; pure.
 */
import type { LoadedPublishDetector, ToolCallState } from "../plugin/api.ts";
import { flagValue } from "./commands.ts";
import { runDetector } from "./detect.ts";
import {
  backslashEscapes,
  effectiveArgv,
  parseShell,
  type Pipeline,
  programName,
} from "./shell_words.ts";

/** Flags whose value is a message's content; `-` means stdin. */
export const CONTENT_FLAGS = ["--content", "--text", "--message", "--body"];

/** An opening fence: fence, info string (up to the line's `\n`, which it needs). */
const OPENER = /^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)$/;
/** A closing fence line. */
const CLOSER = /^[ \t]*(`{3,}|~{3,})[ \t]*$/;
/** What ends a line for `^` and `$` in a multiline regex. */
const LINE_END = /[\n\r\u2028\u2029]/g;

/** A fenced code block: where it starts and ends in the text, its info string and body. */
interface Fenced {
  index: number;
  end: number;
  info: string;
  body: string;
}

/**
 * The fenced code blocks of a text, each closed by the first later line with the same
 * fence: what `^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)\n([\s\S]*?)^[ \t]*\1[ \t]*$` with
 * flags `gm` finds, in linear time (that regex took quadratic time on many unclosed fences).
 */
export function fencedBlocks(text: string): Fenced[] {
  // Line starts and ends as `^` and `$` see them (any line terminator).
  const starts = [0];
  const ends: number[] = [];
  LINE_END.lastIndex = 0;
  for (let m = LINE_END.exec(text); m !== null; m = LINE_END.exec(text)) {
    ends.push(m.index);
    starts.push(m.index + 1);
  }
  ends.push(text.length);
  // The lines that close each fence, by start (ascending).
  const closers = new Map<string, number[]>();
  for (let k = 0; k < starts.length; k++) {
    const fence = CLOSER.exec(text.slice(starts[k], ends[k]))?.[1];
    if (fence === undefined) continue;
    const same = closers.get(fence);
    if (same) same.push(k);
    else closers.set(fence, [k]);
  }
  const found: Fenced[] = [];
  let from = 0;
  for (let k = 0; k < starts.length; k++) {
    const start = starts[k];
    if (start < from) continue;
    const nl = text.indexOf("\n", start);
    if (nl === -1) break;
    const line = text.slice(start, nl);
    const open = OPENER.exec(line);
    if (!open) continue;
    // A `~` fence with no closer of its length is tried shorter (the rest is info), as the
    // regex backtracks; a backtick fence cannot be (a backtick ends the info).
    const fenceAt = line.indexOf(open[1]);
    const shortest = open[1][0] === "~" ? 3 : open[1].length;
    for (let len = open[1].length; len >= shortest; len--) {
      const close = firstAfter(closers.get(open[1].slice(0, len)), starts, nl);
      if (close === null) continue;
      found.push({
        index: start,
        end: ends[close],
        info: len === open[1].length ? open[2] : line.slice(fenceAt + len),
        body: text.slice(nl + 1, starts[close]),
      });
      from = ends[close] + 1;
      break;
    }
  }
  return found;
}

/** The first of `lines` (ascending) that starts after `at`, or null (binary search). */
function firstAfter(lines: number[] | undefined, starts: number[], at: number): number | null {
  if (!lines) return null;
  let lo = 0;
  let hi = lines.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[lines[mid]] > at) hi = mid;
    else lo = mid + 1;
  }
  return lo < lines.length ? lines[lo] : null;
}

/** Info strings of fenced blocks that hold shell commands. */
const SHELL_LANGS = new Set([
  "",
  "sh",
  "bash",
  "shell",
  "zsh",
  "console",
  "shell-session",
  "shellsession",
  "terminal",
]);

/** Content that only a shell could know (`$(cat reply.md)`, `$REPLY`) cannot be unwrapped. */
const UNKNOWABLE = /^\s*(?:\$\(|`|\$\{?[A-Za-z_]\w*\}?\s*$)/;

/** A piece of the text that may be a printed command, and the text around it. */
interface Candidate {
  script: string;
  outside: string;
  fenced: boolean;
}

function candidates(text: string): Candidate[] {
  const found: Candidate[] = [];
  for (const block of fencedBlocks(text)) {
    const lang = block.info.trim().split(/\s+/)[0].toLowerCase();
    if (!SHELL_LANGS.has(lang)) continue;
    const outside = text.slice(0, block.index) + text.slice(block.end);
    found.push({ script: block.body, outside, fenced: true });
  }
  if (found.length === 0 && !/^[ \t]*(`{3,}|~{3,})/m.test(text)) {
    found.push({ script: text, outside: "", fenced: false });
  }
  return found;
}

/** Drops `$ ` prompts when the script is written as a terminal session. */
function stripPrompts(script: string): string {
  return /^\s*\$ /.test(script) ? script.replace(/^([ \t]*)\$ /gm, "$1") : script;
}

/** What `printf FORMAT ARGS…` prints (formats reused while arguments remain, as bash does). */
export function printfOutput(args: readonly string[]): string | null {
  const rest = args[0] === "--" ? args.slice(1) : [...args];
  if (rest[0] === "-v") return null;
  const [format, ...values] = rest;
  if (format === undefined) return "";
  const decoded = backslashEscapes(format);
  let out = "";
  let used = 0;
  do {
    const before = used;
    out += decoded.replace(/%(%|[-+ #0]*\d*(?:\.\d+)?([a-zA-Z]))/g, (_, spec, conv) => {
      if (spec === "%") return "%";
      const value = values[used++] ?? "";
      return conv === "b" ? backslashEscapes(value) : value;
    });
    if (used === before) break;
  } while (used < values.length);
  return out;
}

/** What `echo [-neE] ARGS…` prints. */
export function echoOutput(args: readonly string[]): string {
  let i = 0;
  let newline = true;
  let escapes = false;
  for (; i < args.length && /^-[neE]+$/.test(args[i]); i++) {
    for (const f of args[i].slice(1)) {
      if (f === "n") newline = false;
      else escapes = f === "e";
    }
  }
  const text = args.slice(i).join(" ");
  return (escapes ? backslashEscapes(text) : text) + (newline ? "\n" : "");
}

/** A command's stdin from its own redirections: here-document or here-string. */
function redirectedInput(command: Pipeline[number]): string | null {
  for (const r of [...command.redirects].reverse()) {
    if (r.fd !== "" && r.fd !== "0") continue;
    if (r.op === "<<" || r.op === "<<-") return r.body ?? "";
    if (r.op === "<<<") return r.target + "\n";
  }
  return null;
}

/** What a producer at the head of a pipe prints, when it can be known without running it. */
function printedBy(command: Pipeline[number]): string | null {
  const argv = effectiveArgv(command.argv);
  const name = argv.length > 0 ? programName(argv[0]) : "";
  if (name === "printf") return printfOutput(argv.slice(1));
  if (name === "echo") return echoOutput(argv.slice(1));
  if (name === "cat" && argv.length === 1) return redirectedInput(command);
  return null;
}

/** The content a publish command at `pipeline[k]` would send, when it can be known. */
function contentOf(pipeline: Pipeline, k: number): string | null {
  const argv = effectiveArgv(pipeline[k].argv);
  const flag = flagValue(argv.slice(1), CONTENT_FLAGS);
  const raw = flag !== undefined && flag !== "-"
    ? flag
    : redirectedInput(pipeline[k]) ?? (k > 0 ? printedBy(pipeline[k - 1]) : null);
  if (raw === null || UNKNOWABLE.test(raw)) return null;
  const content = raw.replace(/\n+$/, "");
  return content.trim() === "" ? null : content;
}

/**
 * The reply to publish: the content of the publish command the text prints, else the text.
 * A printed command counts when it names this turn's channel, or names none and is all
 * the text says (so an answer that explains how to post with an example is left as is).
 * The last such command wins.
 */
export function unwrapPrintedPublish(
  text: string,
  detectors: readonly LoadedPublishDetector[],
  channel: string | null,
  diagnostics: string[],
): string {
  for (const candidate of candidates(text).reverse()) {
    const pipelines = parseShell(stripPrompts(candidate.script));
    for (let p = pipelines.length - 1; p >= 0; p--) {
      const pipeline = pipelines[p];
      for (let k = pipeline.length - 1; k >= 0; k--) {
        const call: ToolCallState = {
          toolCallId: "printed",
          status: "completed",
          rawInput: { command: effectiveArgv(pipeline[k].argv) },
        };
        for (const detector of detectors) {
          const detection = runDetector(detector, call, diagnostics);
          if (!detection) continue;
          const to = detection.channel ?? null;
          const alone = candidate.outside.trim() === "" && (candidate.fenced || p === 0);
          if (to !== null ? to !== channel : !alone) continue;
          const content = contentOf(pipeline, k);
          if (content === null) {
            diagnostics.push(
              "publish: the reply is a printed publish command whose content cannot be read; publishing the text as it is",
            );
            return text;
          }
          diagnostics.push(
            `publish: the reply was a printed ${detector.id} command; publishing the content it meant`,
          );
          return content;
        }
      }
    }
  }
  return text;
}
