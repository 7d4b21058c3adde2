/**
 * JSON-RPC 2.0 as the proxy sees it: one line in, the kind of message it is out (or
 * nothing, for blank lines, invalid JSON, batches and anything that is not a message).
 * The proxy only reads messages; lines it does not rewrite are forwarded as their bytes.
 */
import { isObject, nestsDeeper } from "../text/json.ts";

/**
 * A request id: each side of the connection numbers its own. Besides strings and numbers,
 * a peer may write `null` (discouraged, still a request) or a number beyond a double
 * (`1e999`, read as Infinity): such requests are answered like any other.
 */
export type JsonRpcId = string | number | null;

/** A JSON object, as parsed. */
export type JsonObject = Record<string, unknown>;

/** One parsed message. `id` of a response is null when the peer could not read the request. */
export type Message =
  | { kind: "request"; id: JsonRpcId; method: string; params: unknown }
  | { kind: "notification"; method: string; params: unknown }
  | { kind: "result"; id: JsonRpcId; result: unknown; raw: JsonObject }
  | { kind: "error"; id: JsonRpcId; error: JsonObject; raw: JsonObject };

const decoder = new TextDecoder();

/** True for a plain JSON object (lib/text/json.ts; re-exported for the proxy's modules). */
export { isObject };

function isId(value: unknown): value is JsonRpcId {
  return typeof value === "string" || typeof value === "number" || value === null;
}

/**
 * A line nested deeper than MAX_JSON_DEPTH: it passes as its bytes, and nothing may walk
 * inside it. `message` is its envelope when the runtime could parse it: only its top-level
 * members (kind, id, method) and `params.sessionId` may be read; null when it could not.
 */
export interface Opaque {
  kind: "opaque";
  message: Message | null;
}

/** Reads one line as a JSON-RPC message; null when it is not one (the line still passes). */
export function parseMessage(line: Uint8Array): Message | null {
  const read = readMessage(line);
  return read?.kind === "opaque" ? null : read;
}

/** parseMessage, and Opaque for a line nested too deeply to read. */
export function readMessage(line: Uint8Array): Message | Opaque | null {
  const deep = nestsDeeper(line);
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(line));
  } catch {
    return deep ? { kind: "opaque", message: null } : null;
  }
  const message = toMessage(value);
  return deep ? { kind: "opaque", message } : message;
}

/**
 * Reads a line holding a JSON-RPC batch (a JSON array): its messages, for tracking only
 * (the line is still forwarded as its bytes); null when it is not an array.
 */
export function parseBatch(line: Uint8Array): Message[] | null {
  return batchMessages(line)?.filter((m): m is Message => m !== null) ?? null;
}

/**
 * A batch line's elements in order, each its message or null (not one); null when the line
 * is not a JSON array. Element i is the one `batchElements` finds i-th.
 */
export function batchMessages(line: Uint8Array): (Message | null)[] | null {
  if (nestsDeeper(line)) return null;
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(line));
  } catch {
    return null;
  }
  return Array.isArray(value) ? value.map(toMessage) : null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Where each top-level element of a JSON array line lies, `[start, end)` without the white
 * space around it; null when the line is not one array (what follows its `]` must be white
 * space). One pass that steps over strings and their escapes: linear in the line. A batch
 * can so lose some elements while the others keep their bytes exactly.
 */
export function batchElements(line: Uint8Array): { start: number; end: number }[] | null {
  const n = line.length;
  const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0d || b === 0x0a;
  let i = 0;
  while (i < n && isSpace(line[i])) i++;
  if (line[i] !== 0x5b) return null;
  const out: { start: number; end: number }[] = [];
  let depth = 0;
  let start = -1;
  let last = -1;
  for (i++; i < n; i++) {
    const b = line[i];
    if (b === QUOTE) {
      if (start === -1) start = i;
      for (i++; i < n && line[i] !== QUOTE; i++) if (line[i] === BACKSLASH) i++;
      if (i >= n) return null;
      last = i;
      continue;
    }
    if (isSpace(b)) continue;
    if (depth === 0 && (b === 0x2c || b === 0x5d)) {
      if (start !== -1) out.push({ start, end: last + 1 });
      else if (b === 0x2c || out.length > 0) return null; // an empty element
      start = -1;
      if (b === 0x5d) {
        for (i++; i < n; i++) if (!isSpace(line[i])) return null;
        return out;
      }
      continue;
    }
    if (start === -1) start = i;
    last = i;
    if (b === 0x5b || b === 0x7b) depth++;
    else if (b === 0x5d || b === 0x7d) depth--;
    if (depth < 0) return null;
  }
  return null;
}

/** Whether a line's first byte that is not white space is `[`. */
export function startsArray(line: Uint8Array): boolean {
  for (const byte of line) {
    if (byte === 0x5b) return true;
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d && byte !== 0x0a) return false;
  }
  return false;
}

/** Classifies a parsed JSON value as a JSON-RPC message. */
export function toMessage(value: unknown): Message | null {
  if (!isObject(value)) return null;
  const { id, method } = value;
  if (typeof method === "string") {
    if (id === undefined) return { kind: "notification", method, params: value.params };
    if (isId(id)) return { kind: "request", id, method, params: value.params };
    return null;
  }
  if (!isId(id)) return null;
  if (isObject(value.error)) return { kind: "error", id, error: value.error, raw: value };
  if ("result" in value) return { kind: "result", id, result: value.result, raw: value };
  return null;
}

/** A map key for an id: `1` and `"1"` are different requests. */
export function idKey(id: JsonRpcId): string {
  return id === null ? "null" : typeof id === "number" ? `n${id}` : `s${id}`;
}

/** A string member of an object, or null. */
export function stringField(value: unknown, key: string): string | null {
  if (!isObject(value)) return null;
  const field = value[key];
  return typeof field === "string" ? field : null;
}

/** The `sessionId` a request's or notification's params name, if any. */
export function sessionIdOf(params: unknown): string | null {
  return stringField(params, "sessionId");
}

/**
 * Encodes a response as one line whose `id` is `idLexeme` written verbatim: the id as the
 * request wrote it (a number beyond double precision, `1e0`, a string with escapes), so
 * the peer matches it to its request.
 */
export function encodeResponse(message: JsonObject, idLexeme: string, ending: string): Uint8Array {
  const { jsonrpc: _jsonrpc, id: _id, ...rest } = message;
  const body = JSON.stringify(rest);
  const members = body === "{}" ? "" : `,${body.slice(1, -1)}`;
  return new TextEncoder().encode(
    `{"jsonrpc":"2.0","id":${idLexeme}${members}}${ending || "\n"}`,
  );
}

/** Encodes a message as one line with the given terminator. */
export function encodeLine(message: JsonObject, ending: string): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(message) + (ending || "\n"));
}
