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
const EMPTY_MESSAGE = /^\s*(?:internal error|error|unknown error|an error occurred)?\s*[.:]?\s*$/i;
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
    const inner = embeddedJson(value);
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
}

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
 * 429 {...}`), or, when the message says nothing, from its data. When no provider JSON is
 * there, the message itself (without the SDK's `Internal error: ` prefix) is the message,
 * or a readable `data.message` / `data.details`.
 */
export function rpcProviderError(error: RpcError): ProviderError | null {
  const raw = typeof error.message === "string" ? error.message : "";
  const message = raw.replace(INTERNAL_PREFIX, "");
  const fromMessage = parseProviderError(message);
  if (fromMessage) return fromMessage;
  if (!EMPTY_MESSAGE.test(message)) {
    const status = message.match(STATUS_PREFIX);
    return { message: message.trim(), ...(status ? { status: Number(status[1]) } : {}) };
  }
  if (error.data === undefined || error.data === null) return null;
  return parseProviderError(error.data);
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

/**
 * Structured provider codes and what the user must do about them, most specific first (a
 * quota code outranks the rate-limit type that carries it). Sources:
 * - Anthropic `error.type` (https://docs.claude.com/en/api/errors): authentication_error,
 *   permission_error, not_found_error, request_too_large, rate_limit_error, api_error,
 *   overloaded_error, billing_error; `details.error_code` enforced_spend_limit_reached (the
 *   monthly spend limit of the usage tier, a 429 rate_limit_error); `forbidden` ("Request not
 *   allowed", the API refusing the caller's region).
 * - OpenAI `code` / `type` (https://platform.openai.com/docs/guides/error-codes):
 *   insufficient_quota, billing_hard_limit_reached, invalid_api_key,
 *   unsupported_country_region_territory, model_not_found, context_length_exceeded,
 *   rate_limit_exceeded, server_is_overloaded, server_error.
 * - Google ErrorInfo `reason` and status (https://ai.google.dev/gemini-api/docs/troubleshooting,
 *   https://cloud.google.com/apis/design/errors): API_KEY_INVALID, CONSUMER_INVALID,
 *   ACCESS_TOKEN_TYPE_UNSUPPORTED, QUOTA_EXHAUSTED, RATE_LIMIT_EXCEEDED,
 *   MODEL_CAPACITY_EXHAUSTED; UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, UNAVAILABLE,
 *   INTERNAL, DEADLINE_EXCEEDED (RESOURCE_EXHAUSTED is read with its QuotaFailure ids).
 */
const CODE_CATEGORY: ReadonlyArray<[Category, ReadonlySet<string>]> = [
  [
    "quota",
    new Set([
      "insufficient_quota",
      "billing_hard_limit_reached",
      "enforced_spend_limit_reached",
      "billing_error",
      "QUOTA_EXHAUSTED",
      "INSUFFICIENT_G1_CREDITS_BALANCE",
    ]),
  ],
  [
    "auth",
    new Set([
      "authentication_error",
      "permission_error",
      "forbidden",
      "invalid_api_key",
      "unsupported_country_region_territory",
      "API_KEY_INVALID",
      "API_KEY_SERVICE_BLOCKED",
      "CONSUMER_INVALID",
      "ACCESS_TOKEN_TYPE_UNSUPPORTED",
      "UNAUTHENTICATED",
      "PERMISSION_DENIED",
    ]),
  ],
  ["model", new Set(["model_not_found", "not_found_error", "NOT_FOUND"])],
  ["context", new Set(["context_length_exceeded", "request_too_large"])],
  ["rate_limit", new Set(["rate_limit_exceeded", "rate_limit_error", "RATE_LIMIT_EXCEEDED"])],
  [
    "capacity",
    new Set([
      "overloaded_error",
      "server_is_overloaded",
      "api_error",
      "server_error",
      "MODEL_CAPACITY_EXHAUSTED",
      "MODEL_CAPACITY_EXCEEDED",
      "UNAVAILABLE",
      "INTERNAL",
    ]),
  ],
  ["timeout", new Set(["DEADLINE_EXCEEDED"])],
];

/** `limit: 0` — the account has no quota for this model at all (not a passing limit). */
export const NO_QUOTA = /limit:\s*0(?!\d|\.\d)/i;

/** A QuotaFailure id's window: a day or longer is a quota, a minute or second a rate limit. */
function quotaIdCategory(ids: readonly string[] | undefined): Category | undefined {
  if (!ids?.length) return undefined;
  if (ids.some((id) => /Per(?:Day|Month|Week)/.test(id))) return "quota";
  if (ids.some((id) => /Per(?:Minute|Second|Hour)/.test(id))) return "rate_limit";
  return undefined;
}

/**
 * The category a provider error's structured fields give, before any word rule: QuotaFailure
 * ids, then the codes (most specific category first), then RESOURCE_EXHAUSTED as a rate limit.
 * Undefined when the structure says nothing a user can act on (`invalid_request_error`,
 * `INVALID_ARGUMENT`, `FAILED_PRECONDITION`: their words decide).
 */
export function providerCategory(p: ProviderError | null): Category | undefined {
  if (p === null) return undefined;
  // "Quota exceeded for metric: ..., limit: 0": no quota at all for this model.
  if (p.codes?.includes("RESOURCE_EXHAUSTED") && NO_QUOTA.test(p.message)) return "quota";
  const byQuota = quotaIdCategory(p.quotaIds);
  if (byQuota !== undefined) return byQuota;
  const codes = new Set(p.codes ?? []);
  for (const [category, known] of CODE_CATEGORY) {
    for (const c of codes) if (known.has(c)) return category;
  }
  // Google's 402 RESOURCE_EXHAUSTED: prepaid credits depleted.
  if (p.status === 402) return "quota";
  if (codes.has("RESOURCE_EXHAUSTED")) return "rate_limit";
  return undefined;
}
