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
 * a text is read as ending on a failure only when nothing but notices follows the last line
 * of the model's own text — with model text before them, only when the agent's notices
 * include a retry banner or a declared notice (an agent that retried, not a model that
 * ended its answer on an error line).
 */
import { classify } from "./classify.ts";
import type { Classifier } from "./classifier.ts";
import type { Cause, NoticeFacts } from "../core/decide.ts";

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
const RETRY_BANNERS: readonly RegExp[] = [
  /Retrying \(attempt \d+\/\d+, waiting \d+s\)(?:\.\.\.|…)/y,
  /Retrying(?:\.\.\.|…)/y,
  /Retry finished, resuming\./y,
  /Retrying \(\d+\/\d+\) in \d+s(?:\.\.\.|…)(?: \([^()\n]{1,40} to cancel\))?/y,
  /stream disconnected - retrying sampling request \(\d+\/\d+(?: in [^()\n]{1,30})?\)(?:\.\.\.|…)?/y,
];

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
const FAILURE_LINES: readonly RegExp[] = [
  /(?:API )?Error: *([^\n]+)/y,
  /Retry failed after \d+ attempts?: *([^\n]+)/y,
  /[^\n]{0,160}?\bretried \d+ times?\b[^\n]{0,160}?\bLast error: *([^\n]+)/y,
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

/**
 * Reads a streamed text's notices. `declared`: the profile's notice patterns (sticky,
 * multiline; lib/config/config.ts compiles them).
 */
export function readNotices(
  text: string,
  classifier: Classifier,
  now: number,
  diagnostics: string[] = [],
): NoticeReading {
  const declared = classifier.notices ?? [];
  const notices: Notice[] = [];
  /** Where the model's own text ends (the end of its last line), and how much there is. */
  let modelEnd = 0;
  let modelChars = 0;
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
        modelChars += line.trim().length;
        modelEnd = eol;
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
    const notice = noticeAt(text, p, declared, classifier, now, diagnostics);
    if (notice) {
      notices.push(notice);
      p = notice.end;
      lineStart = false;
      continue;
    }
    const eol = lineEnd(text, p);
    modelChars += text.slice(p, eol).trim().length;
    modelEnd = eol;
    p = eol + 1;
    lineStart = true;
  }
  if (notices.length === 0) return { notices, facts: null, text };
  const tail = notices.filter((n) => n.start >= modelEnd);
  const last = tail.at(-1);
  const endsOnFailure = last !== undefined && last.cause !== null &&
    (modelChars === 0 || tail.some((n) => n.kind === "retry" || n.declared));
  return {
    notices,
    facts: {
      failure: endsOnFailure ? last.cause : null,
      modelChars,
      count: notices.length,
    },
    text: withoutDeclared(text, notices),
  };
}

/** The end of the line at `p` (the index of its newline, or the text's end). */
function lineEnd(text: string, p: number): number {
  const i = text.indexOf("\n", p);
  return i === -1 ? text.length : i;
}

/** The notice that starts at `p`, if any: a declared one first, then the generic ones. */
function noticeAt(
  text: string,
  p: number,
  declared: readonly RegExp[],
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): Notice | null {
  const at = (re: RegExp) => {
    re.lastIndex = p;
    const m = re.exec(text);
    return m && m[0].length > 0 && m[0].length <= MAX_NOTICE_CHARS ? m : null;
  };
  for (const re of declared) {
    const m = at(re);
    if (!m) continue;
    const cause = failureCause(m[0], m[0].trim(), classifier, now, diagnostics);
    return {
      kind: cause ? "failure" : "declared",
      start: p,
      end: p + m[0].length,
      cause,
      declared: true,
    };
  }
  for (const re of RETRY_BANNERS) {
    const m = at(re);
    if (m) return { kind: "retry", start: p, end: p + m[0].length, cause: null, declared: false };
  }
  for (const re of FAILURE_LINES) {
    const m = at(re);
    if (!m) continue;
    const cause = failureCause(m[1].trim(), m[0].trim(), classifier, now, diagnostics);
    if (cause) return { kind: "failure", start: p, end: p + m[0].length, cause, declared: false };
  }
  return null;
}

/** The failure a notice's words name (`message`: the whole notice), when they classify. */
function failureCause(
  words: string,
  message: string,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): Cause | null {
  if (!words) return null;
  const { category, retry } = classify(words, undefined, classifier, now, diagnostics);
  if (category === "unknown") return null;
  return {
    error: { code: null, message, category, anchor: "notice", source: null },
    retry,
  };
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
