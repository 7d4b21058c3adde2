/**
 * Classifies a JSON-RPC error object an agent answered a prompt with into a Cause: the
 * profile's anchors (its classifier) look at it as an `{kind: "error"}` input; the readable message is the
 * anchor's cause, else the provider's inner message (agents pass raw provider JSON such
 * as `{"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED"}}` as the
 * message; read by lib/cause/provider_error.ts, the one reader of provider errors), and
 * classify() gives the category and the retry hint.
 */
import { findCause, inputText, MAX_CAUSE_BYTES, tidyCause } from "./anchors.ts";
import { classify } from "./classify.ts";
import { buildCause, type Cause } from "../core/cause.ts";
import type { AnchorInput } from "../plugin/api.ts";
import type { Classifier } from "./classifier.ts";
import { oneLine, utf8Length } from "../text/text.ts";
import { type JsonObject } from "../acp/jsonrpc.ts";
import { isObject, jsonText } from "../text/json.ts";
import { parseProviderError, type ProviderError, rpcProviderError } from "./provider_error.ts";

/**
 * The readable message inside provider JSON embedded in a text (`{"error":{"message":..}}`,
 * `[{"error":...}]`, `got status: 429. {"error":...}`, JSON inside a JSON string); null
 * when the text carries no JSON with a message. The reading itself is the built-in packs'
 * (lib/cause/provider_error.ts), so agent errors read the same in every mode.
 */
export function providerMessage(text: string): string | null {
  return parseProviderError(text)?.message ?? null;
}

/** The message of a JSON-RPC error as text (a non-string message as its JSON). */
function messageText(error: JsonObject): string {
  if (typeof error.message === "string") return error.message;
  return error.message === undefined ? "" : jsonText(error.message);
}

/** The provider error a JSON-RPC error carries in its message, or in its data. */
function providerErrorOf(error: JsonObject): ProviderError | null {
  return rpcProviderError({ code: error.code, message: messageText(error), data: error.data });
}

/**
 * The readable message of a JSON-RPC error: its own message, or the provider message
 * inside it, or — when the message says nothing ("Internal error") — the one in `data`.
 */
export function readableMessage(error: JsonObject): string {
  const found = providerErrorOf(error);
  if (found !== null) return tidyCause(found.message, "none");
  // Data that is plain words (not provider JSON) is the message when the message says none.
  if (typeof error.data === "string" && error.data.trim() !== "") {
    return tidyCause(error.data, "none");
  }
  const raw = messageText(error);
  const code = typeof error.code === "number" || typeof error.code === "string" ? error.code : null;
  return tidyCause(raw, "none") || (code !== null ? `error ${code}` : "error");
}

/** True when a text still carries raw JSON punctuation (`{"key":`, `"}`, `","`). */
export function looksLikeJson(text: string): boolean {
  return /[{[]\s*"|"\s*[}\]:,]/.test(text);
}

/**
 * True when an anchor's cause only echoes the error as anchors read it (message, data
 * and code joined): it then reads worse than the error's own readable message.
 */
export function echoesInput(cause: string, input: AnchorInput): boolean {
  if (looksLikeJson(cause)) return true;
  if (input.kind !== "error") return false;
  const full = oneLine(inputText(input)).trim();
  const message = typeof input.error.message === "string"
    ? oneLine(input.error.message).trim()
    : "";
  if (full === message) return false;
  const capped = utf8Length(cause) >= MAX_CAUSE_BYTES - 3;
  return full.endsWith(cause) || (capped && full.includes(cause));
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
  classifier: Classifier,
  now: number,
): ErrorCauseResult {
  const input = errorInput(error);
  const found = findCause(classifier, [input]);
  const diagnostics = [...found.diagnostics];
  const hit = found.finding?.hit;
  const message = hit && !echoesInput(hit.cause, input) ? hit.cause : readableMessage(error);
  const { category, retry } = classify(inputText(input), hit, classifier, now, diagnostics);
  const ownCode = typeof error.code === "number" || typeof error.code === "string"
    ? error.code
    : null;
  return {
    cause: buildCause({
      code: hit?.code ?? providerErrorOf(error)?.status ?? ownCode,
      message,
      category,
      anchor: found.finding?.anchor.id,
      retry,
      wrapper: WRAPPER_MESSAGE.test(message),
    }),
    diagnostics,
  };
}

/**
 * Messages that only name an agent's wrapper of a failure: ACP's -32000 "Authentication
 * required" (claude-agent-acp sends it for a 401, a 403 and a region block alike, streaming
 * the API's words as a notice just before), and a bare "Internal error".
 */
const WRAPPER_MESSAGE = /^\s*(?:authentication required|internal error|error(?: -?\d+)?)[\s.]*$/i;

/** A stop reason an agent reported as a JSON-RPC error instead of a `stopReason`. */
export type ErrorStop = "max_tokens" | "refusal";

/**
 * Agents' wordings of a stop reason sent as an error:
 * - Claude Code: "API Error: Claude's response exceeded the 32000 output token maximum. To
 *   configure this behavior, set the CLAUDE_CODE_MAX_OUTPUT_TOKENS environment variable."
 *   (@anthropic-ai/claude-agent-sdk cli.js), with claude-agent-acp's `data.errorKind`
 *   `max_output_tokens` (dist/acp-agent.js `errorKindData(lastAssistantError)`);
 * - codex: "stream disconnected before completion: Incomplete response returned, reason:
 *   max_output_tokens" (codex-acp 0.16, the Responses API's `response.incomplete`);
 * - Claude Code: "Claude Code is unable to respond to this request, which appears to violate
 *   our Usage Policy" (cli.js, the API's `stop_reason: "refusal"`).
 */
const STOP_WORDS: ReadonlyArray<[ErrorStop, RegExp]> = [
  ["max_tokens", /output token maximum|incomplete response returned, reason: max_output_tokens/i],
  ["refusal", /appears to violate our usage policy/i],
];

/** The stop reason a JSON-RPC error really reports, or null when it reports a failure. */
export function errorStopReason(error: JsonObject): ErrorStop | null {
  const data = error.data;
  if (isObject(data) && data.errorKind === "max_output_tokens") return "max_tokens";
  const words = `${messageText(error)} ${
    typeof data === "string" ? data : data === undefined ? "" : JSON.stringify(data)
  }`;
  return STOP_WORDS.find(([, re]) => re.test(words))?.[0] ?? null;
}
