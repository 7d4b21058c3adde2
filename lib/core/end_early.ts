/**
 * `--fail-fast`: whether a running turn is ended now, before the agent answers, because its
 * live evidence shows the agent retrying a cause that retrying cannot cure. Pure and
 * table-tested (tests/unit/core/end_early.test.ts); the modes call it on every attempt
 * they observe and carry out what it says (proxy: session/cancel and the true error to the
 * client; run: the agent is stopped).
 */
import { buildCause, type Cause } from "./cause.ts";
import type { AgentAttempt, Category } from "./outcome.ts";
import { retryHint } from "./retry_hint.ts";

/**
 * The categories a later attempt of the same request cannot fix by itself: a spent quota
 * or billing limit (until its reset), rejected credentials, a model that does not exist, a
 * prompt too long for the context window. A rate limit, an overloaded or failing backend
 * and a network error can pass; a cause of unknown category is never taken for a
 * permanent one.
 */
export const PERMANENT: ReadonlySet<Category> = new Set(["quota", "auth", "model", "context"]);

/**
 * How far ahead a spent quota's reset may lie and still be reached by the agent's own
 * retrying within the turn. The recorded agents give up after minutes: Claude Code's
 * default 10 retries span about 2.5 minutes (tests/agents/corpus/claude-agent-acp/
 * quota_daily_retried.jsonl: 146 s of retries, waits growing to 40 s), qwen-code answers
 * after 90–260 s. A reset farther than this (a daily or monthly limit) comes after the
 * agent has given up, whatever it does meanwhile.
 */
export const QUOTA_CURABLE_MS = 5 * 60_000;

/** The turn is to end early: on which attempt, and why (the Outcome's `endedEarly.reason`). */
export interface EndEarly {
  attempt: AgentAttempt;
  reason: string;
}

/**
 * Why retrying within this turn cannot cure an attempt's cause, or null when it can (or
 * may). Only a permanent category (PERMANENT) is ever incurable; a rate limit, an overloaded
 * or failing backend, a network error or a timeout never is, however long its wait. A
 * permanent category the classification marks not retryable is incurable (a quota with no
 * reset time among them). A quota with a reset time is incurable when the reset had
 * already come and the attempt still failed (`retryAfterMs` 0: the time it names does not
 * hold), or when it lies beyond both QUOTA_CURABLE_MS and the agent's announced next
 * attempt (the agent gives up before it); else it is waited out.
 */
export function incurable(attempt: AgentAttempt): string | null {
  if (!PERMANENT.has(attempt.category)) return null;
  if (!attempt.retryable) return "that retrying cannot cure";
  if (attempt.category !== "quota" || attempt.retryAfterMs === undefined) return null;
  const reset = attempt.retryAfterMs;
  if (reset === 0) return "whose stated reset had already come";
  if (reset > Math.max(QUOTA_CURABLE_MS, attempt.nextInMs ?? 0)) {
    return "whose reset is past what the agent's own retries reach";
  }
  return null;
}

/**
 * Whether the turn ends now: `--fail-fast` is on and the newest attempt's cause cannot be
 * cured by retrying within the turn (`incurable`). A retryable category never ends a turn.
 */
export function endEarly(
  attempts: readonly AgentAttempt[],
  failFast: boolean,
): EndEarly | null {
  const last = attempts.at(-1);
  if (!failFast || !last) return null;
  const why = incurable(last);
  if (why === null) return null;
  const where = last.source.kind === "log" ? "its log" : "its session records";
  return {
    attempt: last,
    reason: `--fail-fast: the agent was retrying a ${last.category} failure ${why} ` +
      `(attempt ${last.n}, seen in ${where})`,
  };
}

/**
 * The cause a turn ended early is failed with: the attempt's own, as decide weighs it, with
 * the reset it named when that is still ahead (a reset that had come and did not hold is no
 * reset time).
 */
export function earlyCause(early: EndEarly): Cause {
  const { attempt } = early;
  const afterMs = attempt.retryAfterMs !== undefined && attempt.retryAfterMs > 0
    ? attempt.retryAfterMs
    : null;
  const at = afterMs !== null ? new Date(Date.parse(attempt.at) + afterMs) : null;
  return buildCause({
    message: attempt.cause,
    category: attempt.category,
    code: attempt.code ?? null,
    anchor: attempt.source.kind === "log" ? "live:log" : "live:records",
    retry: retryHint(attempt.category, {
      afterMs,
      at: at && !Number.isNaN(at.getTime()) ? at.toISOString() : null,
    }),
  });
}
