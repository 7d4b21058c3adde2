/**
 * Emit: the Outcome object and the one-line human message that say how a turn ended.
 */
import type { Decision } from "./decide.ts";
import type { Outcome, RetryHint, TurnError } from "./outcome.ts";
import { formatDuration } from "../text/text.ts";

/** What an Outcome is built from besides the decision. */
export interface OutcomeParts {
  mode: Outcome["mode"];
  agent: string;
  session: string | null;
  turn: number;
  startedAt: number;
  endedAt: number;
  stopReason: string | null;
  exit: Outcome["exit"];
  reply: Outcome["reply"];
  publish: Outcome["publish"];
  diagnostics: string[];
}

/** Assembles the Outcome (v1) of one turn. */
export function buildOutcome(parts: OutcomeParts, decision: Decision): Outcome {
  return {
    v: 1,
    mode: parts.mode,
    agent: parts.agent,
    session: parts.session,
    turn: parts.turn,
    startedAt: new Date(parts.startedAt).toISOString(),
    endedAt: new Date(parts.endedAt).toISOString(),
    durationMs: Math.max(0, Math.round(parts.endedAt - parts.startedAt)),
    status: decision.status,
    stopReason: parts.stopReason,
    exit: parts.exit,
    error: decision.error,
    retry: decision.retry,
    reply: parts.reply,
    publish: parts.publish,
    diagnostics: [...new Set(parts.diagnostics)],
  };
}

/** `retry in 40h52m`, `retry at 2026-01-01T00:00:00.000Z`, or "" when nothing is known. */
export function retryPhrase(retry: RetryHint | null): string {
  if (!retry?.retryable) return "";
  if (retry.afterMs !== null) return `retry in ${formatDuration(retry.afterMs)}`;
  if (retry.at !== null) return `retry at ${retry.at}`;
  return "";
}

/**
 * The one stderr line for a failure turnguard surfaced:
 * `turnguard: agy failed (quota): RESOURCE_EXHAUSTED (code 429): ... — retry in 40h52m`.
 */
export function failureLine(agent: string, error: TurnError, retry: RetryHint | null): string {
  const hint = retryPhrase(retry);
  return `turnguard: ${agent} failed (${error.category}): ${error.message}${
    hint ? ` — ${hint}` : ""
  }`;
}
