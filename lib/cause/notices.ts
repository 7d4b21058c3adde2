/**
 * Agent notices: what an agent streams as reply text that the model never wrote — retry
 * banners ("Retrying (attempt 1/2, waiting 1s)..."), failure lines ("API Error: 529 {...}",
 * "Retry failed after 3 attempts: 429 ..."), and the patterns a profile declares
 * (`notices = [...]`). Pure: the text, the profile's classifier and the clock are passed in.
 *
 * Conservative by construction, because a model's answer may discuss any error: a notice is
 * recognised only where a line starts (or right after another notice), never inside a
 * fenced or indented code block; a failure line counts only when the profile's classifier
 * gives its words a category (a provider error signature, not just the word "Error"); and
 * a text is read as ending on a failure only when nothing but notices follows the model's
 * own text — with model text before them, only when the agent appended them to it (on the
 * same line, as agents stream them) or they include a declared notice, not when the model
 * ended its answer by quoting such lines.
 */
import { classify } from "./classify.ts";
import type { Classifier } from "./classifier.ts";
import type { NoticeFacts } from "../core/decide.ts";
import { buildCause, type Cause } from "../core/cause.ts";

/** What kind of notice a span of text is. */
export type NoticeKind = "retry" | "failure" | "declared";

/** One notice found in a text: where it is, its kind, and for a failure its cause. */
export interface Notice {
  kind: NoticeKind;
  start: number;
  end: number;
  /** The failure's words (a failure notice, or a declared one whose words classify). */
  cause: Cause | null;
  /** A profile's declared notice (removed from `reply.text`). */
  declared: boolean;
}

/**
 * Retry banners agents stream as reply text, each from the agent's source:
 * - pi-acp (github.com/svkozak/pi-acp, src/acp/session.ts `formatAutoRetryMessage`, emitted
 *   as an `agent_message_chunk` on pi's `auto_retry_start`):
 *   `Retrying (attempt ${attempt}/${maxAttempts}, waiting ${delaySeconds}s)...`, or
 *   `Retrying...` when the event lacks its numbers; on `auto_retry_end`:
 *   `Retry finished, resuming.`
 * - pi (github.com/badlogic/pi-mono, packages/coding-agent/src/modes/interactive/
 *   interactive-mode.ts, `auto_retry_start`):
 *   `Retrying (${attempt}/${maxAttempts}) in ${delaySeconds}s... (<key> to cancel)`
 * - codex (github.com/openai/codex, codex-rs/core/src/codex.rs):
 *   `stream disconnected - retrying sampling request (${retries}/${max_retries} in ${delay:?})...`
 * Sticky: tried only where a notice may start.
 */
const NUMBERED: readonly string[] = [
  String.raw`Retrying \(attempt \d+\/\d+, waiting \d+s\)(?:\.\.\.|…)`,
  String.raw`Retrying \(\d+\/\d+\) in \d+s(?:\.\.\.|…)(?: \([^()\n]{1,40} to cancel\))?`,
  String
    .raw`stream disconnected - retrying sampling request \(\d+\/\d+(?: in [^()\n]{1,30})?\)(?:\.\.\.|…)?`,
];
const RETRY_BANNERS: readonly RegExp[] = [
  ...NUMBERED.map((source) => new RegExp(source, "y")),
  /Retrying(?:\.\.\.|…)/y,
  /Retry finished, resuming\./y,
];

/**
 * The banners that name their attempt, searched for within a line too (an agent streams
 * one right after the model's text, with no line break): too specific to be prose.
 */
const NUMBERED_BANNERS: readonly RegExp[] = NUMBERED.map((source) => new RegExp(source));

/**
 * Failure lines: the words after the prefix (group 1) must carry a provider error
 * signature. Sources:
 * - `API Error: ...`: Claude Code's failure text (plugins/claude.ts: "API Error: 529
 *   {"type":"error",...}", anthropics/claude-code#39745);
 * - `Error: ...`: an error printed the way JavaScript prints one (ECMA-262,
 *   Error.prototype.toString: name, ": ", message), as agents print a caught error;
 * - `Retry failed after N attempts: ...`: pi (packages/coding-agent/src/modes/interactive/
 *   interactive-mode.ts, `auto_retry_end` with `success: false`);
 * - `... retried N times ... Last error: ...`: an agent giving up after its retries.
 * A line only: the words end at the line's end.
 */
const FAILURE_LINES: readonly { needle: string; re: RegExp }[] = [
  { needle: "Error:", re: /(?:API )?Error: *([^\n]+)/y },
  { needle: "Retry failed after ", re: /Retry failed after \d+ attempts?: *([^\n]+)/y },
  {
    needle: "Last error:",
    re: /[^\n]{0,160}?\bretried \d+ times?\b[^\n]{0,160}?\bLast error: *([^\n]+)/y,
  },
];

/** Longest line read as a notice: a longer one is the model's prose. */
const MAX_NOTICE_CHARS = 2048;

/** The reading of a streamed text: its notices, the facts decide takes, the text without the declared ones. */
export interface NoticeReading {
  notices: Notice[];
  /** Null when the text holds no notice. */
  facts: NoticeFacts | null;
  /** The text less the profile's declared notices (the text itself when none). */
  text: string;
}

/** A span of the text as the first pass reads it: the model's, or a possible notice. */
interface Span {
  kind: NoticeKind | "model";
  start: number;
  end: number;
  /** A failure line's words (classified only when the span is in the text's tail). */
  words?: string;
  declared?: boolean;
}

/** At most this many notices at the text's end are classified (a longer run is prose). */
const MAX_TAIL = 16;

/**
 * Reads a streamed text's notices. `declared`: the profile's notice patterns (sticky,
 * multiline; lib/config/config.ts compiles them). Only the notices at the text's end are
 * classified (a failure line elsewhere is the model's text: the turn went on after it), so
 * a long text costs one pass of cheap matches.
 */
export function readNotices(
  text: string,
  classifier: Classifier,
  now: number,
  diagnostics: string[] = [],
): NoticeReading {
  const spans = readSpans(text, classifier.notices ?? []);
  // The text's tail: the notices after the model's last text, read from the end; a
  // failure line whose words do not classify is the model's text.
  const causes = new Map<Span, Cause>();
  let tail = spans.length;
  for (let i = spans.length - 1; i >= 0 && spans.length - i <= MAX_TAIL; i--) {
    const span = spans[i];
    if (span.kind === "model") break;
    if (span.kind === "failure" || span.declared) {
      const message = text.slice(span.start, span.end).trim();
      const cause = span.words !== undefined
        ? failureCause(span.words, message, classifier, now, diagnostics, true)
        : failureCause(message, message, classifier, now, diagnostics);
      if (cause) causes.set(span, cause);
      else if (span.kind === "failure") break;
    }
    tail = i;
  }
  const notices: Notice[] = [];
  let modelChars = 0;
  spans.forEach((span, i) => {
    const notice = span.kind === "retry" || span.declared === true ||
      (span.kind === "failure" && i >= tail);
    if (!notice) {
      modelChars += text.slice(span.start, span.end).trim().length;
      return;
    }
    const cause = causes.get(span) ?? null;
    notices.push({
      kind: cause ? "failure" : span.kind === "retry" ? "retry" : "declared",
      start: span.start,
      end: span.end,
      cause,
      declared: span.declared === true,
    });
  });
  if (notices.length === 0) return { notices, facts: null, text };
  const last = tail < spans.length ? causes.get(spans[spans.length - 1]) ?? null : null;
  const endsOnFailure = last !== null && (modelChars === 0 || agentAppended(text, spans, tail));
  return {
    notices,
    facts: { failure: endsOnFailure ? last : null, modelChars, count: notices.length },
    text: withoutDeclared(text, notices),
  };
}

/**
 * Whether the notices at the text's end (from `spans[tail]`) were appended by the agent to
 * the model's text rather than quoted by the model: they follow its last text on the same
 * line (agents stream a notice as a chunk of its own, with no line break: pi-acp's
 * `Retrying (...)...` right after the model's words), or a notice the profile declares is
 * among them. A model that quotes notices puts them on lines of their own.
 */
function agentAppended(text: string, spans: readonly Span[], tail: number): boolean {
  if (spans.slice(tail).some((span) => span.declared)) return true;
  const model = spans.slice(0, tail).findLast((span) => span.kind === "model");
  return model !== undefined && tail < spans.length &&
    !text.slice(model.end, spans[tail].start).includes("\n");
}

/**
 * The first pass: the text cut into the model's spans and possible notices. A notice is
 * tried where a line starts or right after another notice, never in a fenced or indented
 * code block; the model's text runs to its line's end, or to a numbered retry banner an
 * agent streamed right after it (its chunks carry no line break).
 */
function readSpans(text: string, declared: readonly RegExp[]): Span[] {
  const spans: Span[] = [];
  let fence = false;
  let p = 0;
  let lineStart = true;
  while (p < text.length) {
    if (lineStart) {
      const eol = lineEnd(text, p);
      const line = text.slice(p, eol);
      const code = /^ {0,3}(?:```|~~~)/.test(line);
      if (code) fence = !fence;
      if (/\S/.test(line) && (code || fence || /^(?: {4}|\t)/.test(line))) {
        spans.push({ kind: "model", start: p, end: eol });
        p = eol + 1;
        continue;
      }
    }
    while (p < text.length && /[ \t\r]/.test(text[p])) p++;
    if (p >= text.length) break;
    if (text[p] === "\n") {
      p++;
      lineStart = true;
      continue;
    }
    const notice = noticeAt(text, p, declared);
    if (notice) {
      spans.push(notice);
      p = notice.end;
      lineStart = false;
      continue;
    }
    const eol = lineEnd(text, p);
    const banner = bannerWithin(text, p + 1, eol);
    spans.push({ kind: "model", start: p, end: banner ?? eol });
    p = banner ?? eol + 1;
    lineStart = banner === null;
  }
  return spans;
}

/**
 * Where in `text[from, to)` a numbered retry banner starts (NUMBERED_BANNERS), or null.
 */
function bannerWithin(text: string, from: number, to: number): number | null {
  if (to <= from) return null;
  const line = text.slice(from, to);
  let best: number | null = null;
  for (const re of NUMBERED_BANNERS) {
    const i = line.search(re);
    if (i !== -1 && (best === null || i < best)) best = i;
  }
  return best === null ? null : from + best;
}

/** The end of the line at `p` (the index of its newline, or the text's end). */
function lineEnd(text: string, p: number): number {
  const i = text.indexOf("\n", p);
  return i === -1 ? text.length : i;
}

/** The possible notice that starts at `p`: a declared one first, then the generic ones. */
function noticeAt(text: string, p: number, declared: readonly RegExp[]): Span | null {
  const at = (re: RegExp) => {
    re.lastIndex = p;
    const m = re.exec(text);
    return m && m[0].length > 0 && m[0].length <= MAX_NOTICE_CHARS ? m : null;
  };
  for (const re of declared) {
    const m = at(re);
    if (m) return { kind: "declared", start: p, end: p + m[0].length, declared: true };
  }
  for (const re of RETRY_BANNERS) {
    const m = at(re);
    if (m) return { kind: "retry", start: p, end: p + m[0].length };
  }
  // A failure line is tried only when its line holds the pattern's fixed words.
  const line = text.slice(p, Math.min(lineEnd(text, p), p + MAX_NOTICE_CHARS));
  for (const { needle, re } of FAILURE_LINES) {
    if (!line.includes(needle)) continue;
    const m = at(re);
    if (m) return { kind: "failure", start: p, end: p + m[0].length, words: m[1].trim() };
  }
  return null;
}

/**
 * How much of a failure line's words must carry its signature: a notice names its failure
 * at once ("429 Too Many Requests", "529 {...}", "connect ECONNREFUSED ..."), where a
 * model's paragraph that opens with "Error:" goes on to discuss it.
 */
const HEAD_CHARS = 60;

/** The head of a failure's words: up to the end of the first sentence, at most HEAD_CHARS. */
function head(words: string): string {
  const cut = words.slice(0, HEAD_CHARS);
  const stop = cut.search(/[.!?](?:\s|$)/);
  return stop === -1 ? cut : cut.slice(0, stop + 1);
}

/**
 * The failure a notice's words name (`message`: the whole notice), when they classify —
 * the head of a generic failure line alone must (`headOnly`).
 */
function failureCause(
  words: string,
  message: string,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
  headOnly = false,
): Cause | null {
  if (!words) return null;
  if (headOnly && classify(head(words), undefined, classifier, now).category === "unknown") {
    return null;
  }
  const { category, retry } = classify(words, undefined, classifier, now, diagnostics);
  if (category === "unknown") return null;
  return buildCause({ message, category, anchor: "notice", retry });
}

/** The text without the declared notices (and the line breaks that only ended them). */
function withoutDeclared(text: string, notices: readonly Notice[]): string {
  const drop = notices.filter((n) => n.declared);
  if (drop.length === 0) return text;
  let out = "";
  let from = 0;
  for (const n of drop) {
    out += text.slice(from, n.start);
    from = n.end;
    if (text[from] === "\r") from++;
    if (text[from] === "\n") from++;
  }
  return out + text.slice(from);
}
