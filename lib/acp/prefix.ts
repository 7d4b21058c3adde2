/**
 * The top-level members of a JSON-RPC message read from its first bytes only: a line too
 * long to inspect is never held whole, yet its kind and id decide which request it
 * answers. Also gives the id's lexeme exactly as written, so responses turnguard builds
 * carry the id the client sent (`9007199254740993`, `1e0`) rather than its double.
 */
import type { JsonRpcId } from "./jsonrpc.ts";

/** What the first bytes of a message tell. */
export interface PrefixScan {
  /** Top-level keys seen (a key whose value is cut off counts). */
  keys: Set<string>;
  /** The `id` member's lexeme, when whole in the prefix and a string or number. */
  idLexeme: string | null;
  /** The `method` member, when whole in the prefix and a string. */
  method: string | null;
}

/** How many bytes of a long line are kept to read its kind and id. */
export const PREFIX_BYTES = 4096;

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/;

/** End of the JSON string starting at `text[at]` (`"`), past its closing quote; -1 if cut. */
function stringEnd(text: string, at: number): number {
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i];
    if (c === "\\") i++;
    else if (c === '"') return i + 1;
  }
  return -1;
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && " \t\r\n".includes(text[at])) at++;
  return at;
}

/** End of the value starting at `text[at]`; -1 if it runs past the prefix. */
function valueEnd(text: string, at: number): number {
  const c = text[at];
  if (c === '"') return stringEnd(text, at);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let i = at; i < text.length; i++) {
      const d = text[i];
      if (d === '"') {
        i = stringEnd(text, i);
        if (i === -1) return -1;
        i--;
      } else if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    return -1;
  }
  let i = at;
  while (i < text.length && !",}] \t\r\n".includes(text[i])) i++;
  return i < text.length ? i : -1;
}

/**
 * Reads the top-level members of the JSON object `text` begins (it may be cut anywhere).
 * Values that are not whole are skipped; scanning stops at the first one.
 */
export function scanPrefix(text: string): PrefixScan {
  const scan: PrefixScan = { keys: new Set(), idLexeme: null, method: null };
  let at = skipSpace(text, 0);
  if (text[at] !== "{") return scan;
  at++;
  for (;;) {
    at = skipSpace(text, at);
    if (text[at] === ",") at = skipSpace(text, at + 1);
    if (text[at] !== '"') return scan;
    const keyEnd = stringEnd(text, at);
    if (keyEnd === -1) return scan;
    let key: string;
    try {
      key = JSON.parse(text.slice(at, keyEnd)) as string;
    } catch {
      return scan;
    }
    at = skipSpace(text, keyEnd);
    if (text[at] !== ":") return scan;
    at = skipSpace(text, at + 1);
    scan.keys.add(key);
    const end = valueEnd(text, at);
    if (end === -1) return scan;
    const lexeme = text.slice(at, end);
    if (key === "id") {
      const number = lexeme.match(NUMBER);
      if (lexeme[0] === '"' || lexeme === "null" || number?.[0] === lexeme) scan.idLexeme = lexeme;
    } else if (key === "method" && lexeme[0] === '"') {
      try {
        scan.method = JSON.parse(lexeme) as string;
      } catch { /* not a string after all */ }
    }
    at = end;
  }
}

/** The id a lexeme from `scanPrefix` stands for. */
export function idOfLexeme(lexeme: string): JsonRpcId {
  return JSON.parse(lexeme) as JsonRpcId;
}

/** Whether the scanned bytes begin a response: an id, no method, a result or an error. */
export function isResponsePrefix(scan: PrefixScan): boolean {
  return scan.idLexeme !== null && !scan.keys.has("method") &&
    (scan.keys.has("result") || scan.keys.has("error"));
}

/** Whether the scanned bytes begin a request: an id and a method. */
export function isRequestPrefix(scan: PrefixScan): boolean {
  return scan.idLexeme !== null && scan.method !== null;
}
