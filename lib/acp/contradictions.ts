/**
 * Wire contradictions: small pure rules that read one turn's wire facts against each other
 * and say when the reply the client saw cannot be the whole answer (docs/EVIDENCE.md).
 * Each rule gives its words for the Outcome, or null.
 */
import { isObject } from "./jsonrpc.ts";

/** Text that resumed after a silence this long may be a retry re-streaming the answer. */
export const RESTART_GAP_MS = 500;
/** A restart is the same first characters again: this many (or the shorter attempt's). */
export const RESTART_PREFIX_CHARS = 24;
/** Shorter leading fragments are too common to tell a restart by. */
export const RESTART_MIN_CHARS = 8;

/**
 * The attempts of a reply whose text restarted: at each break (a character offset where
 * text resumed after a silent gap with no other output between), the text from the break
 * begins with the same fragment the current attempt began with. Returns the offset where
 * each attempt starts (the first is 0) when there was a restart, else null. Attempts are
 * delimited only at such breaks, so a reply that merely repeats a phrase is one attempt.
 */
export function restartedAttempts(text: string, breaks: readonly number[]): number[] | null {
  const starts = [0];
  for (const b of breaks) {
    if (b <= 0 || b >= text.length) continue;
    const current = starts[starts.length - 1];
    const n = Math.min(RESTART_PREFIX_CHARS, b - current, text.length - b);
    if (n < RESTART_MIN_CHARS) continue;
    if (text.slice(b, b + n) === text.slice(current, current + n)) starts.push(b);
  }
  return starts.length > 1 ? starts : null;
}

/** What the agent's usage says of its output, read from a prompt result's `usage`. */
function usageOf(result: unknown): { output: number; other: number } | null {
  if (!isObject(result) || !isObject(result.usage)) return null;
  const u = result.usage;
  if (typeof u.outputTokens !== "number") return null;
  const other = [u.inputTokens, u.totalTokens, u.cachedReadTokens].reduce<number>(
    (sum, n) => sum + (typeof n === "number" && n > 0 ? n : 0),
    0,
  );
  return { output: u.outputTokens, other };
}

/**
 * Usage that counts no output for a turn that streamed text: the answer the client saw was
 * never completed (e.g. claude-agent-acp totals usage from the SDK's result, which counts
 * only a response that finished). Usage that is all zeros (a gateway that reports none) is
 * no evidence.
 */
export function zeroOutputUsage(result: unknown, chars: number): string | null {
  if (chars === 0) return null;
  const usage = usageOf(result);
  if (!usage || usage.output !== 0 || usage.other === 0) return null;
  return `the agent's usage counts 0 output tokens for a turn that streamed ${chars} characters: the reply was not completed`;
}

/** The turn's last message by `messageId`, as the wire showed it. */
export interface LastMessage {
  id: string;
  /** Text characters streamed under this id. */
  chars: number;
}

/** An `end_turn` whose final message (by `messageId`) never got content. */
export function emptyFinalMessage(
  stopReason: string | null,
  last: LastMessage | null,
): string | null {
  if (stopReason !== "end_turn" || last === null || last.chars > 0) return null;
  return `the turn ended while its final message (${last.id}) had no content`;
}
