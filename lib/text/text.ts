/** Small pure text helpers shared by the scanner, the anchors and the emitters. */

const encoder = new TextEncoder();

/** Byte length of a string in UTF-8. */
export function utf8Length(text: string): number {
  return encoder.encode(text).length;
}

/**
 * Cuts `text` to at most `maxBytes` bytes of UTF-8 without splitting a character, so a
 * capped cause or reply is always valid UTF-8. Returns the text unchanged when it fits.
 */
export function capUtf8(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes) return text;
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so the cut lands on a character start.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/**
 * Removes glog's self-wrapped duplicate tail: Go errors wrapped as `fmt.Errorf("%v: %w")`
 * print `<msg>.: <msg>`. The tail is removed only when the part after the `.: ` seam
 * really repeats the end of the part before it; anything else is left as written.
 */
export function dewrapGlog(text: string): string {
  let out = text;
  for (let seam = out.indexOf(".: "); seam !== -1; seam = out.indexOf(".: ", seam + 1)) {
    const before = out.slice(0, seam);
    const after = out.slice(seam + 3).replace(/\.$/, "").trimEnd();
    if (after.length > 0 && before.endsWith(after)) {
      out = before + ".";
      break;
    }
  }
  return out;
}

/** Formats a duration for people: `40h52m`, `1m12s`, `1.5s`, `300ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const totalSeconds = ms / 1000;
  if (totalSeconds < 10 && !Number.isInteger(totalSeconds)) {
    return `${Math.round(totalSeconds * 10) / 10}s`;
  }
  const s = Math.round(totalSeconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return m > 0 ? `${h}h${m}m` : `${h}h`;
  if (m > 0) return sec > 0 ? `${m}m${sec}s` : `${m}m`;
  return `${sec}s`;
}

/** The last `maxLines` non-blank lines of a text, joined by ` | ` for a one-line message. */
export function lastLines(text: string, maxLines: number): string {
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l.length > 0);
  return lines.slice(-maxLines).join(" | ");
}

/**
 * Joins a text's lines into one: each run of line breaks, with the white space around it,
 * becomes one space. Linear on any input (the regex `\s*[\r\n]+\s*` it replaces took
 * quadratic time on a long run of spaces).
 */
export function oneLine(text: string): string {
  const pieces = text.split(/[\r\n]+/);
  if (pieces.length === 1) return text;
  const out: string[] = [];
  for (let i = 0; i < pieces.length; i++) {
    let piece = pieces[i];
    if (i > 0) piece = piece.trimStart();
    if (i < pieces.length - 1) piece = piece.trimEnd();
    // A line of white space only between two breaks vanishes into the one space.
    if (piece !== "" || i === 0 || i === pieces.length - 1) out.push(piece);
  }
  return out.join(" ");
}

/**
 * The most characters of one agent-controlled text turnguard classifies (anchors, retry
 * hints, provider errors): a cause is in a message's head, and every pass over a text is
 * bounded by it.
 */
export const MAX_CLASSIFIED_CHARS = 256 * 1024;

/** The head of a text that is classified (see MAX_CLASSIFIED_CHARS). */
export function classifiedHead(text: string): string {
  return text.length > MAX_CLASSIFIED_CHARS ? text.slice(0, MAX_CLASSIFIED_CHARS) : text;
}
