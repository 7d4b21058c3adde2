/**
 * Lines too long (or nested too deeply) to read: while one passes, its first PREFIX_BYTES
 * are kept and scanned for what they tell (a request's id and method, a response).
 */
import type { JsonRpcId } from "../acp/jsonrpc.ts";
import { joinBytes } from "../acp/lines.ts";
import {
  idOfLexeme,
  isRequestPrefix,
  isResponsePrefix,
  PREFIX_BYTES,
  type PrefixScan,
  scanPrefix,
} from "../acp/prefix.ts";
import type { Turn } from "./turns.ts";

/** Why a line is not read: longer than the inspection limit. */
export const TOO_LONG = "longer than the inspection limit";
/** Why a line is not read: nested too deeply. */
export const TOO_DEEP = "nested too deeply to read";

const decoder = new TextDecoder();

/** A line too long (or nested too deeply) to inspect, while it passes. */
export interface LongLine {
  /** Why it is not read: TOO_LONG or TOO_DEEP. */
  why: string;
  prefix: Uint8Array[];
  bytes: number;
  /** Set once PREFIX_BYTES (or the whole line) came. */
  scan: PrefixScan | null;
  /** The turn whose output it is (agent lines), once known. */
  turn: Turn | undefined;
}

/** A long line that begins to pass. */
export function newLong(why = TOO_LONG): LongLine {
  return { why, prefix: [], bytes: 0, scan: null, turn: undefined };
}

/**
 * Keeps a long line's piece up to PREFIX_BYTES; once the prefix is complete (or the line
 * ended), scans it and returns the scan and its text; null before, and after that once.
 */
export function keepPrefix(
  long: LongLine,
  piece: Uint8Array,
  end: boolean,
): { scan: PrefixScan; text: string } | null {
  if (long.scan !== null) return null;
  const room = PREFIX_BYTES - long.bytes;
  if (room > 0) {
    const part = piece.subarray(0, room).slice();
    long.prefix.push(part);
    long.bytes += part.length;
  }
  if (!end && long.bytes < PREFIX_BYTES) return null;
  const text = decoder.decode(joinBytes(long.prefix, long.bytes));
  const scan = long.scan = scanPrefix(text);
  long.prefix = [];
  return { scan, text };
}

/** What a scanned prefix says of its line. */
export type PrefixKind =
  | { kind: "request"; id: JsonRpcId; idLexeme: string; method: string }
  | { kind: "response"; id: JsonRpcId; isError: boolean }
  | { kind: "other" };

/** Reads a scanned prefix: a request (id and method), a response, or something else. */
export function prefixKind(scan: PrefixScan | null): PrefixKind {
  if (scan === null) return { kind: "other" };
  const { idLexeme, method } = scan;
  if (isRequestPrefix(scan) && idLexeme !== null && method !== null) {
    return { kind: "request", id: idOfLexeme(idLexeme), idLexeme, method };
  }
  if (isResponsePrefix(scan) && idLexeme !== null) {
    return { kind: "response", id: idOfLexeme(idLexeme), isError: scan.keys.has("error") };
  }
  return { kind: "other" };
}

/** The id lexeme a request line writes (looked for in its first bytes). */
export function idLexemeOf(line: Uint8Array, id: JsonRpcId): string {
  const lexeme = scanPrefix(decoder.decode(line.subarray(0, PREFIX_BYTES))).idLexeme;
  return lexeme !== null && idOfLexeme(lexeme) === id ? lexeme : JSON.stringify(id);
}
