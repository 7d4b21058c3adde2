/**
 * The responses turnguard writes instead of the agent's: a surfaced failure in place of an
 * empty `end_turn`, an agent error with turnguard's reading added under
 * `error.data.turnguard`, and the errors that answer a prompt the agent cannot answer
 * (silent turn, dead agent). Pure: messages in, messages out.
 */
import { retryHint } from "../core/retry_hint.ts";
import type { Outcome } from "../core/outcome.ts";
import { isObject, type JsonObject, type JsonRpcId } from "../acp/jsonrpc.ts";

/** JSON-RPC's internal error, the convention for backend failures surfaced to a client. */
export const INTERNAL_ERROR = -32603;

/** What turnguard adds under `error.data.turnguard`: its reading of the turn. */
export type TurnguardData = JsonObject;

/** What `turnguardData` reads: an Outcome, or the same parts of a request's failure. */
export type FailureFacts = Pick<Outcome, "status" | "error" | "retry" | "stopReason">;

/**
 * turnguard's reading of a failed turn (or request), as clients receive it: one shape for
 * every response turnguard annotates or makes up.
 */
export function turnguardData(outcome: FailureFacts): TurnguardData {
  const data: TurnguardData = {
    status: outcome.status,
    category: outcome.error?.category ?? null,
    message: outcome.error?.message ?? null,
    code: outcome.error?.code ?? null,
    anchor: outcome.error?.anchor ?? null,
    retry: outcome.retry,
  };
  if (outcome.error?.source) data.source = outcome.error.source;
  if (outcome.stopReason !== null) data.stopReason = outcome.stopReason;
  return data;
}

/**
 * turnguard's reading of a request other than a prompt that the dead agent left
 * unanswered: a crash, in the shape of a turn's (`turnguardData`).
 */
export function crashData(message: string, code: number | null): TurnguardData {
  return requestFailure(message, code, "crash");
}

/**
 * turnguard's reading of a request it answered itself because too many of the same side's
 * requests were in flight: turnguard's own capacity, retryable once some are answered.
 */
export function overloadData(message: string): TurnguardData {
  return requestFailure(message, INTERNAL_ERROR, "capacity");
}

function requestFailure(
  message: string,
  code: number | null,
  category: "crash" | "capacity",
): TurnguardData {
  return turnguardData({
    status: "failed",
    error: { code, message, category, anchor: null, source: null },
    retry: retryHint(category),
    stopReason: null,
  });
}

/** A fresh error response: `{"jsonrpc":"2.0","id":..,"error":{code,message,data}}`. */
export function errorResponse(
  id: JsonRpcId | null,
  message: string,
  turnguard: TurnguardData,
  code: number = INTERNAL_ERROR,
): JsonObject {
  return { jsonrpc: "2.0", id, error: { code, message, data: { turnguard } } };
}

/**
 * `--strict-turns`: the error that answers a prompt the agent ended with `end_turn` while
 * its answer was incomplete (cut or refused): clients that only read `stopReason` learn it.
 * The partial text the client already received is repeated in `data.partialText`.
 */
export function incompleteResponse(
  id: JsonRpcId | null,
  outcome: Outcome,
  partialText: string,
): JsonObject {
  const cause = outcome.error?.message ??
    (outcome.status === "refused" ? "the model refused to answer" : "the reply was cut short");
  const message = `turn ${outcome.status}: ${cause}`;
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: INTERNAL_ERROR,
      message,
      data: { turnguard: turnguardData(outcome), partialText },
    },
  };
}

/** True for a code that is really an HTTP status (`429`, `503`), not a JSON-RPC code. */
export function isHttpStatusCode(code: unknown): boolean {
  return typeof code === "number" && Number.isInteger(code) && code >= 100 && code <= 599;
}

/** True for a code JSON-RPC allows: any integer that is not an HTTP status. */
export function isJsonRpcCode(code: unknown): boolean {
  return typeof code === "number" && Number.isInteger(code) && !isHttpStatusCode(code);
}

/**
 * The agent's error response with `turnguard` added to `error.data` (created when absent;
 * data that is not an object is left alone). With `rewrite`, a code that is not a JSON-RPC
 * code becomes -32603 and the message becomes the readable cause; the originals are kept
 * in `data.turnguard`.
 */
export function annotateError(
  response: JsonObject,
  turnguard: TurnguardData,
  rewrite: boolean,
): JsonObject {
  const error = response.error;
  if (!isObject(error)) return response;
  const member: TurnguardData = { ...turnguard };
  const next: JsonObject = { ...error };
  if (rewrite) {
    if (!isJsonRpcCode(error.code)) {
      member.originalCode = error.code ?? null;
      next.code = INTERNAL_ERROR;
    }
    const readable = turnguard.message;
    if (typeof readable === "string" && readable !== error.message) {
      member.originalMessage = error.message ?? null;
      next.message = readable;
    }
  }
  if (error.data === undefined) next.data = { turnguard: member };
  else if (isObject(error.data)) next.data = { ...error.data, turnguard: member };
  return { ...response, error: next };
}
