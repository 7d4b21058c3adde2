/**
 * Reads a model provider's error out of whatever an agent wrapped it in: a JSON-RPC error
 * whose message is "Internal error" and whose data holds the provider JSON, a message like
 * `API Error: 429 {"type":"error","error":{...}}`, Google's `[{"error":{...,"details":[...]}}]`,
 * or JSON inside a JSON string. Pure helpers shared by the built-in packs; not a pack.
 *
 * Formats read (each cited where it is used):
 * - Google APIs: `{"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED",
 *   "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"},
 *   {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"QUOTA_EXHAUSTED"}]}}`
 *   (google-gemini/gemini-cli packages/core/src/utils/googleQuotaErrors.ts).
 * - Anthropic: `{"type":"error","error":{"type":"rate_limit_error","message":"..."}}`
 *   (https://docs.anthropic.com/en/api/errors).
 * - OpenAI: `{"error":{"message":"...","type":"insufficient_quota","code":"insufficient_quota"}}`
 *   (https://platform.openai.com/docs/guides/error-codes).
 */
import { isObject, jsonText, parseBoundedJson } from "../text/json.ts";
import { classifiedHead } from "../text/text.ts";
import type { Category } from "../core/outcome.ts";
import type { AnchorInput } from "../plugin/api.ts";
import { parseDuration } from "../core/retry_hint.ts";

/** What a provider error says, as far as it says it. */
export interface ProviderError {
  /** The innermost readable message. */
  message: string;
  /** HTTP status (`"code": 429`, `API Error: 529`, `http_status_code`). */
  status?: number;
  /** gRPC / Google status word (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`). */
  grpc?: string;
  /** Provider error type or code (`rate_limit_error`, `insufficient_quota`). */
  type?: string;
  /** `google.rpc.ErrorInfo` reason (`QUOTA_EXHAUSTED`, `MODEL_CAPACITY_EXHAUSTED`). */
  reason?: string;
  /** `google.rpc.RetryInfo` delay, in milliseconds. */
  retryDelayMs?: number;
  /**
   * Every structured code seen, outer first: Anthropic `error.type` and `details.error_code`,
   * OpenAI `code` and `type`, Google `status` and ErrorInfo `reason`.
   */
  codes?: string[];
  /** `google.rpc.QuotaFailure` violations' `quotaId`s (`GenerateRequestsPerDayPerProjectPerModel`). */
  quotaIds?: string[];
}

const MAX_DEPTH = 8;
/** Messages that say nothing by themselves, so the error's data is read instead. */
const EMPTY_MESSAGE =
  /^\s*(?:internal error|agent error|error|unknown error|an error occurred)?\s*[.:]?\s*$/i;
/** The JSON-RPC SDK's prefix for internal errors with a message (`Internal error: ...`). */
const INTERNAL_PREFIX = /^\s*internal error:\s*/i;
/** `API Error: 429 {...}`, `API Error (529 {...})`, `Error: 400 {...}`, `got status: 429`, `429 {...}`. */
const STATUS_PREFIX = /(?:\b(?:API Error|Error|got status|status)\s*(?:[:(]\s*)?|^\s*)(\d{3})\b/i;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Most JSON.parse attempts one text gets (bounds the work on bracket-heavy text). */
const MAX_PARSE_ATTEMPTS = 32;

/** An opening bracket, searched from a position (`lastIndex`). */
const OPENING = /[{[]/g;

/**
 * The first JSON object or array inside a text, if one parses. Linear in the text apart
 * from the bounded parse attempts: a run of brackets no closing one follows is passed in
 * one step each, and JSON nested deeper than MAX_JSON_DEPTH is not parsed.
 */
export function embeddedJson(text: string): Json | undefined {
  let attempts = 0;
  const lastClose = { "{": text.lastIndexOf("}"), "[": text.lastIndexOf("]") };
  OPENING.lastIndex = 0;
  for (let open = OPENING.exec(text); open !== null; open = OPENING.exec(text)) {
    const start = open.index;
    const opening = text[start] as "{" | "[";
    const close = opening === "{" ? "}" : "]";
    for (let end = lastClose[opening]; end > start; end = text.lastIndexOf(close, end - 1)) {
      if (++attempts > MAX_PARSE_ATTEMPTS) return undefined;
      const parsed = parseBoundedJson(text.slice(start, end + 1));
      if (parsed !== undefined) return parsed as Json;
      // else try a shorter span
    }
    OPENING.lastIndex = start + 1;
  }
  return undefined;
}

/**
 * The JSON in a text whose JSON was escaped into a string once more than it was parsed
 * (a gateway's envelope around a provider error, `{\"error\":{\"message\":...}}`): the text
 * unescaped once, then read as embeddedJson reads it. Undefined when the text has no `\"`.
 */
export function escapedJson(text: string): Json | undefined {
  const at = text.indexOf('\\"');
  if (at === -1) return undefined;
  const start = text.lastIndexOf("{", at);
  if (start === -1) return undefined;
  const end = text.lastIndexOf("}");
  if (end <= at) return undefined;
  const unescaped = parseBoundedJson(`"${text.slice(start, end + 1)}"`);
  return typeof unescaped === "string" ? embeddedJson(unescaped) : undefined;
}

/** Milliseconds of a protobuf Duration string (`"37s"`, `"0.539477544s"`). */
function durationMs(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const ms = parseDuration(value);
  return ms === null ? undefined : ms;
}

/** Folds what one JSON object says into `into` (outer values are kept, inner ones fill gaps). */
function collect(value: unknown, into: Partial<ProviderError>, depth: number): void {
  if (depth > MAX_DEPTH) return;
  if (typeof value === "string") {
    const inner = embeddedJson(value) ?? escapedJson(value);
    if (inner !== undefined) {
      const status = value.match(STATUS_PREFIX);
      if (status && into.status === undefined) into.status = Number(status[1]);
      collect(inner, into, depth + 1);
    } else if (into.message === undefined && value.trim() !== "") {
      into.message = value.trim();
    }
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collect(item, into, depth + 1);
    return;
  }
  if (!isObject(value)) return;
  const { code, status, type, reason } = value;
  for (const c of [type, code, value.error_code, status, reason]) {
    if (typeof c === "string" && /^[A-Za-z_]+$/.test(c) && c !== "error") {
      (into.codes ??= []).push(c);
    }
  }
  if (typeof value.quotaId === "string") (into.quotaIds ??= []).push(value.quotaId);
  if (Array.isArray(value.violations)) collect(value.violations, into, depth + 1);
  if (typeof code === "number" && code >= 100 && code <= 599) into.status ??= code;
  if (typeof code === "string" && /^[a-z_]+$/.test(code)) into.type ??= code;
  // A gateway's status as a string (LiteLLM's proxy: `"code": "429"`).
  if (typeof code === "string" && /^[1-5]\d\d$/.test(code)) into.status ??= Number(code);
  if (typeof status === "string" && /^[A-Z_]+$/.test(status)) into.grpc ??= status;
  if (typeof status === "number" && status >= 100 && status <= 599) into.status ??= status;
  if (typeof type === "string" && type !== "error") into.type ??= type;
  if (typeof reason === "string" && /^[A-Z_]+$/.test(reason)) into.reason ??= reason;
  if (typeof value.retryDelay === "string") into.retryDelayMs ??= durationMs(value.retryDelay);
  // The nested error first: its message is the innermost, most readable one.
  if ("error" in value) collect(value.error, into, depth + 1);
  for (const key of ["message", "detail", "error_description"]) {
    if (key in value) collect(value[key], into, depth + 1);
  }
  if (Array.isArray(value.details)) collect(value.details, into, depth + 1);
  else if (typeof value.details === "string" || isObject(value.details)) {
    collect(value.details, into, depth + 1);
  }
  // Any other key: an agent's own shape (`{"cause": "..."}`, `{"reason": ...}`) still says
  // what happened when the known keys said nothing.
  if (into.message !== undefined) return;
  for (const [key, inner] of Object.entries(value)) {
    if (KNOWN_KEYS.has(key)) continue;
    // A sentence or a nested object; an identifier (`"errorKind": "rate_limit"`) is no message.
    if (typeof inner === "string" ? !/\s/.test(inner.trim()) : typeof inner !== "object") continue;
    collect(inner, into, depth + 1);
    if (into.message !== undefined) return;
  }
}

/** Keys read by name above (an id or a status word is no message). */
const KNOWN_KEYS = new Set([
  "code",
  "status",
  "type",
  "reason",
  "error_code",
  "quotaId",
  "violations",
  "retryDelay",
  "error",
  "message",
  "detail",
  "error_description",
  "details",
  "@type",
  "domain",
  "param",
  "request_id",
  "requestId",
]);

/**
 * Parses provider error JSON found in `value` (a string with JSON in it, or parsed JSON);
 * null when there is none. The message is the innermost readable one.
 */
export function parseProviderError(value: unknown): ProviderError | null {
  const found: Partial<ProviderError> = {};
  if (typeof value === "string") {
    const text = classifiedHead(value);
    const json = embeddedJson(text);
    if (json === undefined) return null;
    const status = text.match(STATUS_PREFIX);
    if (status && text.indexOf(status[0]) < text.search(/[{[]/)) {
      found.status = Number(status[1]);
    }
    collect(json, found, 0);
  } else {
    collect(value, found, 0);
  }
  return found.message === undefined ? null : { ...found, message: found.message };
}

/** A JSON-RPC error object as an anchor sees it (the `error` of an `error` input). */
export type RpcError = Extract<AnchorInput, { kind: "error" }>["error"];

/**
 * The provider error inside a JSON-RPC error: from its message (`Internal error: API Error:
 * 429 {...}`), or, when the message says nothing ("Internal error", "Agent error"), from its
 * data, whatever its shape (a bare string, `details`, a nested `error`, another key). When no
 * provider JSON is in the message, the message itself (without the SDK's `Internal error: `
 * prefix) is the message, with the codes and status the data holds.
 */
export function rpcProviderError(error: RpcError): ProviderError | null {
  const raw = typeof error.message === "string" ? error.message : "";
  const message = raw.replace(INTERNAL_PREFIX, "");
  const fromMessage = parseProviderError(message);
  if (fromMessage) return fromMessage;
  const fromData = error.data === undefined || error.data === null
    ? null
    : parseProviderError(error.data);
  if (EMPTY_MESSAGE.test(message)) {
    if (fromData !== null || typeof error.data !== "string") return fromData;
    // Data that is plain words is the message.
    const words = classifiedHead(error.data).trim();
    return words === "" ? null : { message: words };
  }
  // The message says something: it stays the message; codes and a status in the data are
  // the provider's own, more specific than the message's words.
  const status = message.match(STATUS_PREFIX);
  return {
    ...fromData,
    message: message.trim(),
    ...(status ? { status: Number(status[1]) } : {}),
  };
}

/** The readable text of any anchor input's error (for category rules that read words). */
export function errorWords(error: RpcError): string {
  const parts: string[] = [];
  if (typeof error.message === "string") parts.push(classifiedHead(error.message));
  if (error.data !== undefined) {
    parts.push(classifiedHead(typeof error.data === "string" ? error.data : jsonText(error.data)));
  }
  return parts.join(" ");
}

/**
 * The category an HTTP status gives by itself, where it gives one: 429 rate limit, 402
 * payment, 401/403 auth, 404 (of a model) not found, 408/504 timeout, 413 too large for the
 * context, 5xx/529 capacity.
 */
export function statusCategory(status: number | undefined): Category | undefined {
  if (status === undefined) return undefined;
  if (status === 429) return "rate_limit";
  if (status === 402) return "quota";
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "model";
  if (status === 408 || status === 504) return "timeout";
  if (status === 413) return "context";
  if (status >= 500 && status <= 599) return "capacity";
  return undefined;
}

/** The category a gRPC / Google status word gives by itself. */
export function grpcCategory(grpc: string | undefined): Category | undefined {
  switch (grpc) {
    case "RESOURCE_EXHAUSTED":
      return "rate_limit";
    case "UNAVAILABLE":
      return "capacity";
    case "UNAUTHENTICATED":
    case "PERMISSION_DENIED":
      return "auth";
    case "NOT_FOUND":
      return "model";
    case "DEADLINE_EXCEEDED":
      return "timeout";
    default:
      return undefined;
  }
}

/** `limit: 0` — the account has no quota for this model at all (not a passing limit). */
export const NO_QUOTA = /limit:\s*0(?!\d|\.\d)/i;
