/**
 * Wire contradictions: small pure rules that read one turn's wire facts against each other
 * and say when the reply the client saw cannot be the whole answer (docs/EVIDENCE.md).
 * Each rule gives its words for the Outcome, or null.
 */
import { isObject } from "../acp/jsonrpc.ts";

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

/**
 * The attempts of a reply already known to be broken (cut, or retried by the agent), told
 * by its first characters alone: each place the text begins again with them starts an
 * attempt. Only for such turns: without a silent gap or a recorded error, a reply that
 * repeats its opening words is just a reply.
 */
export function repeatedStarts(text: string): number[] | null {
  const n = Math.min(RESTART_PREFIX_CHARS, Math.floor(text.length / 2));
  if (n < RESTART_MIN_CHARS) return null;
  const head = text.slice(0, n);
  const starts = [0];
  for (let at = text.indexOf(head, 1); at !== -1; at = text.indexOf(head, at + n)) {
    starts.push(at);
  }
  return starts.length > 1 ? starts : null;
}

/**
 * A reply the client saw shorter than the final answer the agent recorded: the streamed
 * text's last attempt (`streamed`) is a strict beginning of the recorded answer.
 */
export function shorterThanRecorded(streamed: string, recorded: string): string | null {
  const r = recorded.trimEnd();
  if (r.length === 0) return null;
  const at = streamed.lastIndexOf(r.slice(0, Math.min(RESTART_PREFIX_CHARS, r.length)));
  // The attempt that begins the recorded answer; a stream shorter than that beginning is
  // compared whole.
  const tail = (at === -1 ? streamed : streamed.slice(at)).trimEnd();
  if (tail.length === 0 || tail.length >= r.length || !r.startsWith(tail)) return null;
  return `the client received ${tail.length} of the ${r.length} characters of the final answer the agent recorded: the streamed reply was cut`;
}

const positive = (...ns: unknown[]) =>
  ns.reduce<number>((sum, n) => sum + (typeof n === "number" && n > 0 ? n : 0), 0);

/**
 * What the agent's usage says of its output, read from a prompt result: ACP's `usage`
 * (`outputTokens`, claude-agent-acp) or `_meta.quota.token_count` (`output_tokens`,
 * claude-agent-acp and gemini-cli).
 */
export function usageOf(result: unknown): { output: number; other: number } | null {
  if (!isObject(result)) return null;
  const u = result.usage;
  if (isObject(u) && typeof u.outputTokens === "number") {
    return { output: u.outputTokens, other: positive(u.inputTokens, u.totalTokens) };
  }
  const meta = isObject(result._meta) ? result._meta : null;
  const quota = meta && isObject(meta.quota) ? meta.quota : null;
  const count = quota && isObject(quota.token_count) ? quota.token_count : null;
  if (count && typeof count.output_tokens === "number") {
    return { output: count.output_tokens, other: positive(count.input_tokens, count.totalTokens) };
  }
  return null;
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

/**
 * Usage that counts output for a turn that showed nothing at all (no text, no thought, no
 * tool call): the model answered and the agent dropped it — a refusal or a blocked reply
 * (gemini-cli drops a SAFETY stop without a word).
 */
export function droppedAnswer(result: unknown, chars: number, activity: number): string | null {
  if (chars > 0 || activity > 0) return null;
  const usage = usageOf(result);
  if (!usage || usage.output <= 0) return null;
  return `the agent's usage counts ${usage.output} output tokens but it streamed nothing: the model's answer was dropped (a refusal or a blocked reply)`;
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
