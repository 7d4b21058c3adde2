/**
 * A fast look at `session/update` lines without parsing them. ACP SDKs serialize these
 * notifications in one canonical shape:
 *
 *   {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"K",...
 *
 * When a line starts with exactly these bytes, its session and update kind are certain
 * (every key named is the first of its object), so the proxy need not decode and parse a
 * long tool result just to learn whose it is. Lines of any other shape are parsed. The
 * look allocates nothing for the common kinds: the session is compared as bytes.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Bytes to match, also as little-endian 32-bit words (compared four bytes at a time). */
interface Pattern {
  bytes: Uint8Array;
  words: Uint32Array;
}

function pattern(text: string): Pattern {
  const bytes = encoder.encode(text);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const words = new Uint32Array(bytes.length >> 2);
  for (let i = 0; i < words.length; i++) words[i] = view.getUint32(i * 4, true);
  return { bytes, words };
}

/** Byte arrays up to this size keep their DataView between calls (a chunk's lines). */
const VIEW_CACHE_MAX = 1024 * 1024;
let viewBytes: Uint8Array | null = null;
let cachedView: DataView | null = null;

/** A DataView of `bytes`; the same one for the lines of one chunk. */
function viewOf(bytes: Uint8Array): DataView {
  if (bytes === viewBytes) return cachedView!;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  if (bytes.length <= VIEW_CACHE_MAX) viewBytes = bytes, cachedView = view;
  return view;
}

/** True when `bytes` holds `p` at `at`; the caller checked that it fits. */
function matchAt(view: DataView, bytes: Uint8Array, at: number, p: Pattern): boolean {
  const words = p.words;
  for (let i = 0; i < words.length; i++) {
    if (view.getUint32(at + 4 * i, true) !== words[i]) return false;
  }
  const all = p.bytes;
  for (let i = words.length * 4; i < all.length; i++) if (bytes[at + i] !== all[i]) return false;
  return true;
}

const HEAD = pattern('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"');
const MID = pattern('","update":{"sessionUpdate":"');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Update kinds known by name, matched as bytes (others are decoded). */
const KNOWN_KINDS = [
  "agent_message_chunk",
  "agent_thought_chunk",
  "user_message_chunk",
  "tool_call",
  "tool_call_update",
  "plan",
  "usage_update",
  "available_commands_update",
  "current_mode_update",
  "config_option_update",
  "session_info_update",
].map((kind) => ({ kind, pattern: pattern(kind) }));

/**
 * Where a canonical `session/update` line keeps its session and kind. Offsets are into the
 * bytes given to `peekUpdate`, which may hold other lines around it (the proxy looks at
 * lines inside the chunk they came in, without a view of each).
 */
export interface UpdatePeek {
  /** The line is `bytes[lineStart, lineEnd)`, its terminator included. */
  lineStart: number;
  lineEnd: number;
  /** The session id's bytes are `line[idStart, idEnd)` (a plain JSON string, no escapes). */
  idStart: number;
  idEnd: number;
  /** `update.sessionUpdate`. */
  kind: string;
  /** Offset just past the kind's closing quote. */
  end: number;
}

/** True when `line` holds `bytes` at `at`. */
export function bytesAt(line: Uint8Array, at: number, bytes: Uint8Array): boolean {
  if (line.length < at + bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (line[at + i] !== bytes[i]) return false;
  return true;
}

/** The closing quote of a JSON string with no escapes from `from`, before `stop`; else -1. */
function plainStringEnd(line: Uint8Array, from: number, stop: number): number {
  for (let i = from; i < stop; i++) {
    const b = line[i];
    if (b === QUOTE) return i;
    if (b === BACKSLASH || b < 0x20) return -1;
  }
  return -1;
}

function kindAt(line: Uint8Array, start: number, end: number): string {
  const length = end - start;
  const view = viewOf(line);
  for (let i = 0; i < KNOWN_KINDS.length; i++) {
    const { kind, pattern } = KNOWN_KINDS[i];
    if (pattern.bytes.length === length && matchAt(view, line, start, pattern)) return kind;
  }
  return decoder.decode(line.subarray(start, end));
}

/**
 * Where the session and kind of a canonical `session/update` line are; null otherwise. The
 * line is `bytes[start, end)` (by default all of `bytes`).
 */
export function peekUpdate(
  bytes: Uint8Array,
  start = 0,
  end: number = bytes.length,
): UpdatePeek | null {
  if (end - start < HEAD.bytes.length) return null;
  const view = viewOf(bytes);
  if (!matchAt(view, bytes, start, HEAD)) return null;
  const idStart = start + HEAD.bytes.length;
  const idEnd = plainStringEnd(bytes, idStart, Math.min(end, idStart + 1024));
  if (idEnd === -1 || end - idEnd < MID.bytes.length || !matchAt(view, bytes, idEnd, MID)) {
    return null;
  }
  const kindStart = idEnd + MID.bytes.length;
  const kindEnd = plainStringEnd(bytes, kindStart, Math.min(end, kindStart + 128));
  if (kindEnd === -1) return null;
  return {
    lineStart: start,
    lineEnd: end,
    idStart,
    idEnd,
    kind: kindAt(bytes, kindStart, kindEnd),
    end: kindEnd + 1,
  };
}

/** The session id of a peeked line, decoded. */
export function peekedSessionId(line: Uint8Array, peek: UpdatePeek): string {
  return decoder.decode(line.subarray(peek.idStart, peek.idEnd));
}

const TEXT_HEAD = pattern(',"content":{"type":"text","text":"');
const TEXT_TAIL = encoder.encode('"}}}}');

/** Where the text of a canonical `agent_message_chunk` line is: `line[start, end)`. */
export interface TextSpan {
  start: number;
  end: number;
  /**
   * The text's length in UTF-16 units (JavaScript characters), measured in the same pass
   * that checked it; null when its bytes are not well-formed UTF-8 (the decoder's
   * replacement characters decide the length then).
   */
  units: number | null;
}

/**
 * The text of a canonical `agent_message_chunk` line (`..."content":{"type":"text",
 * "text":"T"}}}}` and the line's end), when T has no escapes; null for any other line,
 * which is then parsed.
 */
export function peekChunkText(line: Uint8Array, peek: UpdatePeek): TextSpan | null {
  const lineEnd = peek.lineEnd;
  if (lineEnd - peek.end < TEXT_HEAD.bytes.length) return null;
  if (!matchAt(viewOf(line), line, peek.end, TEXT_HEAD)) return null;
  const start = peek.end + TEXT_HEAD.bytes.length;
  // One pass over the text: its end found, checked for escapes and control characters,
  // and measured at once.
  const units = measureText(line, start, lineEnd);
  if (units === NOT_PLAIN) return null;
  const close = textEnd;
  if (lineEnd - close < TEXT_TAIL.length || !bytesAt(line, close, TEXT_TAIL)) return null;
  const rest = lineEnd - (close + TEXT_TAIL.length);
  const tailOk = rest === 0 || (rest === 1 && line[lineEnd - 1] === 0x0a) ||
    (rest === 2 && line[lineEnd - 2] === 0x0d && line[lineEnd - 1] === 0x0a);
  if (!tailOk) return null;
  return { start, end: close, units };
}

/** What measureText answers for text with an escape or a control character (or unclosed). */
const NOT_PLAIN = -1;
/** Where the text measureText last measured ends (its closing quote). */
let textEnd = 0;

/**
 * Measures a JSON string's text from `start` to its closing quote (set in `textEnd`),
 * before `stop`: its length in UTF-16 units, null when it is not well-formed UTF-8, and
 * NOT_PLAIN when it holds an escape or a control character or is not closed before `stop`.
 */
function measureText(bytes: Uint8Array, start: number, stop: number): number | null {
  const view = viewOf(bytes);
  let n = 0;
  for (let i = start; i < stop; i++) {
    // Four bytes at a time while they are plain ASCII (no quote, backslash or control).
    while (i + 4 <= stop) {
      const w = view.getUint32(i, true);
      if ((w & 0x80808080) !== 0) break;
      const quote = w ^ 0x22222222;
      const backslash = w ^ 0x5c5c5c5c;
      const special = ((w - 0x20202020) & ~w) | ((quote - 0x01010101) & ~quote) |
        ((backslash - 0x01010101) & ~backslash);
      if ((special & 0x80808080) !== 0) break;
      n += 4;
      i += 4;
    }
    if (i >= stop) break;
    const b = bytes[i];
    if (b < 0x80) {
      if (b === QUOTE) {
        textEnd = i;
        return n;
      }
      if (b === BACKSLASH || b < 0x20) return NOT_PLAIN;
      n++;
      continue;
    }
    const extra = sequenceLength(bytes, i, stop);
    if (extra === 0) return plainEnd(bytes, i, stop) ? null : NOT_PLAIN;
    n += extra === 3 ? 2 : 1;
    i += extra;
  }
  return NOT_PLAIN;
}

/** The malformed text goes on to its closing quote (set in `textEnd`) without escapes. */
function plainEnd(bytes: Uint8Array, from: number, stop: number): boolean {
  for (let i = from; i < stop; i++) {
    const b = bytes[i];
    if (b === QUOTE) {
      textEnd = i;
      return true;
    }
    if (b === BACKSLASH || b < 0x20) return false;
  }
  return false;
}

/**
 * The number of continuation bytes of the well-formed UTF-8 sequence that starts with the
 * byte `bytes[i]` (at least 0x80) and ends before `end`; 0 when it is not well-formed.
 */
function sequenceLength(bytes: Uint8Array, i: number, end: number): number {
  const b = bytes[i];
  let extra: number;
  let low = 0x80;
  let high = 0xbf;
  if (b >= 0xc2 && b <= 0xdf) extra = 1;
  else if (b >= 0xe0 && b <= 0xef) {
    extra = 2;
    if (b === 0xe0) low = 0xa0;
    if (b === 0xed) high = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    extra = 3;
    if (b === 0xf0) low = 0x90;
    if (b === 0xf4) high = 0x8f;
  } else return 0;
  if (i + extra >= end) return 0;
  const second = bytes[i + 1];
  if (second < low || second > high) return 0;
  for (let k = 2; k <= extra; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return 0;
  return extra;
}

/**
 * The first bytes of a span, at most `maxBytes`, cut on a character boundary (never inside
 * a UTF-8 sequence): its decoded text is the longest head of the span's text that fits.
 */
export function spanHead(line: Uint8Array, span: TextSpan, maxBytes: number): TextSpan {
  if (span.end - span.start <= maxBytes) return span;
  let end = span.start + maxBytes;
  while (end > span.start && (line[end] & 0xc0) === 0x80) end--;
  return { start: span.start, end, units: null };
}

/** Decodes a span of a line as UTF-8. */
export function spanText(line: Uint8Array, span: TextSpan): string {
  return decoder.decode(line.subarray(span.start, span.end));
}

/**
 * The length in UTF-16 units (JavaScript characters) of well-formed UTF-8 bytes, counted
 * without decoding them; null when they are not well-formed (the decoder's replacement
 * characters decide the length then).
 */
export function utf16Length(bytes: Uint8Array, start: number, end: number): number | null {
  let n = 0;
  for (let i = start; i < end; i++) {
    if (bytes[i] < 0x80) {
      n++;
      continue;
    }
    const extra = sequenceLength(bytes, i, end);
    if (extra === 0) return null;
    n += extra === 3 ? 2 : 1;
    i += extra;
  }
  return n;
}
