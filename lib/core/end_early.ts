/**
 * `--fail-fast`: whether a running turn is ended now, before the agent answers, because its
 * live evidence shows the agent retrying a cause that retrying cannot cure. Pure and
 * table-tested (tests/unit/core/end_early.test.ts); the modes call it on every attempt
 * they observe and carry out what it says (proxy: session/cancel and the true error to the
 * client; run: the agent is stopped).
 */
import { buildCause, type Cause } from "./cause.ts";
import type { AgentAttempt, Category } from "./outcome.ts";

/**
 * The categories a later attempt of the same request cannot fix by itself: a spent quota
 * or billing limit, rejected credentials, a model that does not exist, a prompt too long
 * for the context window. A rate limit, an overloaded or failing backend and a network
 * error can pass; a cause of unknown category is never taken for a permanent one.
 */
export const PERMANENT: ReadonlySet<Category> = new Set(["quota", "auth", "model", "context"]);

/** The turn is to end early: on which attempt, and why (the Outcome's `endedEarly.reason`). */
export interface EndEarly {
  attempt: AgentAttempt;
  reason: string;
}

/**
 * Whether the turn ends now: `--fail-fast` is on and the newest attempt's cause is of a
 * permanent category that the classification marks not retryable (a quota with a reset
 * time is waited out by the retry policy, not cut). A retryable cause never ends a turn.
 */
export function endEarly(
  attempts: readonly AgentAttempt[],
  failFast: boolean,
): EndEarly | null {
  const last = attempts.at(-1);
  if (!failFast || !last || last.retryable || !PERMANENT.has(last.category)) return null;
  const where = last.source.kind === "log" ? "its log" : "its session records";
  return {
    attempt: last,
    reason: `--fail-fast: the agent was retrying a ${last.category} failure that retrying ` +
      `cannot cure (attempt ${last.n}, seen in ${where})`,
  };
}

/** The cause a turn ended early is failed with: the attempt's own, as decide weighs it. */
export function earlyCause(early: EndEarly): Cause {
  const { attempt } = early;
  return buildCause({
    message: attempt.cause,
    category: attempt.category,
    code: attempt.code ?? null,
    anchor: attempt.source.kind === "log" ? "live:log" : "live:records",
  });
}
