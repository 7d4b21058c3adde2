/**
 * Classifies a JSON-RPC error object an agent answered a prompt with into a Cause: the
 * profile's anchors look at it as an `{kind: "error"}` input; the readable message is the
 * anchor's cause, else the provider's inner message (agents pass raw provider JSON such
 * as `{"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED"}}` as the
 * message), and classify() gives the category and the retry hint.
 */
import { findCause, inputText, MAX_CAUSE_BYTES, tidyCause } from "../anchors.ts";
import { classify } from "../classify.ts";
import type { Cause } from "../decide.ts";
import type { AnchorInput, LoadedAnchor } from "../plugin.ts";
import { utf8Length } from "../text.ts";
import { isObject, type JsonObject } from "./jsonrpc.ts";

/** How deep provider JSON is followed (JSON inside a string inside JSON...). */
const MAX_DEPTH = 16;

/** Messages that say nothing by themselves; the error's data is read instead. */
const GENERIC_MESSAGE = /^\s*(?:internal error|error|unknown error|an error occurred)?\s*\.?\s*$/i;

/** Keys that hold a readable message in provider JSON, most telling first. */
const MESSAGE_KEYS = ["error", "message", "detail", "details", "error_description"] as const;

/**
 * The readable message inside provider JSON embedded in a text (`{"error":{"message":..}}`,
 * `[{"error":...}]`, `got status: 429. {"error":...}`, JSON inside a JSON string); null
 * when the text carries no JSON with a message.
 */
export function providerMessage(text: string): string | null {
  return embeddedMessage(text, 0);
}

function embeddedMessage(text: string, depth: number): string | null {
  if (depth > MAX_DEPTH) return null;
  const parsed = embeddedJson(text);
  return parsed === undefined ? null : innerMessage(parsed, depth + 1);
}

/** The first JSON object or array inside a text, if any parses. */
function embeddedJson(text: string): unknown {
  const start = text.search(/[{[]/);
  if (start === -1) return undefined;
  const close = text[start] === "{" ? "}" : "]";
  const end = text.lastIndexOf(close);
  if (end <= start) return undefined;
  try {
    return JSON.parse(text.slice(start, end + 1));
  } catch {
    return undefined;
  }
}

/** The readable message a parsed provider value carries. */
function innerMessage(value: unknown, depth: number): string | null {
  if (depth > MAX_DEPTH) return null;
  if (typeof value === "string") {
    const trimmed = value.trim();
    if (trimmed === "") return null;
    return embeddedMessage(trimmed, depth + 1) ?? trimmed;
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = innerMessage(item, depth + 1);
      if (found !== null) return found;
    }
    return null;
  }
  if (!isObject(value)) return null;
  for (const key of MESSAGE_KEYS) {
    if (!(key in value)) continue;
    const found = innerMessage(value[key], depth + 1);
    if (found !== null) return found;
  }
  return null;
}

/**
 * The readable message of a JSON-RPC error: its own message, or the provider message
 * inside it, or — when the message says nothing ("Internal error") — the one in `data`.
 */
export function readableMessage(error: JsonObject): string {
  const raw = typeof error.message === "string"
    ? error.message
    : error.message === undefined
    ? ""
    : JSON.stringify(error.message);
  const inner = providerMessage(raw);
  if (inner !== null) return tidyCause(inner, "none");
  if (!GENERIC_MESSAGE.test(raw)) return tidyCause(raw, "none");
  const fromData = innerMessage(error.data, 0);
  if (fromData !== null) return tidyCause(fromData, "none");
  const code = typeof error.code === "number" || typeof error.code === "string" ? error.code : null;
  return tidyCause(raw, "none") || (code !== null ? `error ${code}` : "error");
}

/** True when a text still carries raw JSON punctuation (`{"key":`, `"}`, `","`). */
export function looksLikeJson(text: string): boolean {
  return /[{[]\s*"|"\s*[}\]:,]/.test(text);
}

const oneLine = (text: string) => text.replace(/\s*[\r\n]+\s*/g, " ").trim();

/**
 * True when an anchor's cause only echoes the error as anchors read it (message, data
 * and code joined): it then reads worse than the error's own readable message.
 */
export function echoesInput(cause: string, input: AnchorInput): boolean {
  if (looksLikeJson(cause)) return true;
  if (input.kind !== "error") return false;
  const full = oneLine(inputText(input));
  const message = typeof input.error.message === "string" ? oneLine(input.error.message) : "";
  if (full === message) return false;
  const capped = utf8Length(cause) >= MAX_CAUSE_BYTES - 3;
  return full.endsWith(cause) || (capped && full.includes(cause));
}

/** The status code a provider error names (`"code": 429` inside the message or data). */
export function providerCode(error: JsonObject): number | null {
  for (const source of [error.message, error.data]) {
    const text = typeof source === "string" ? source : JSON.stringify(source ?? null);
    const m = text.match(/"code"\s*:\s*(\d{3})\b/);
    if (m) return Number(m[1]);
  }
  return null;
}

/** The anchor input for a JSON-RPC error object. */
export function errorInput(error: JsonObject): AnchorInput {
  return { kind: "error", error: { code: error.code, message: error.message, data: error.data } };
}

/** A classified agent error and what went wrong while classifying it. */
export interface ErrorCauseResult {
  cause: Cause;
  diagnostics: string[];
}

/**
 * Classifies an agent's JSON-RPC error. An anchor's cause is the message unless it only
 * echoes the error (raw JSON, or the error's text as anchors read it), then the error's
 * readable message is. Category and retry come from the anchor's hit, else from classify() over
 * the whole error text (so `retryDelay` in `data.details` is found).
 */
export function errorCause(
  error: JsonObject,
  anchors: readonly LoadedAnchor[],
  now: number,
): ErrorCauseResult {
  const input = errorInput(error);
  const found = findCause(anchors, [input]);
  const diagnostics = [...found.diagnostics];
  const hit = found.finding?.hit;
  const message = hit && !echoesInput(hit.cause, input) ? hit.cause : readableMessage(error);
  const textAnchors = anchors.filter((a) => a.on.includes("text"));
  const { category, retry } = classify(inputText(input), hit, textAnchors, now, diagnostics);
  const ownCode = typeof error.code === "number" || typeof error.code === "string"
    ? error.code
    : null;
  return {
    cause: {
      error: {
        code: hit?.code ?? providerCode(error) ?? ownCode,
        message,
        category,
        anchor: found.finding?.anchor.id ?? null,
        source: null,
      },
      retry,
    },
    diagnostics,
  };
}
