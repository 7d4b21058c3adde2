/**
 * The retry policy: whether a failed attempt is tried again, and after how long. Pure: the
 * caller passes the attempt's facts, the flags and the random source, and writes the
 * decision to the journal before it publishes the failed attempt's end.
 */
import { RETRYABLE } from "../core/retry_hint.ts";
import type { SettledWhy } from "../journal/records.ts";
import type { Outcome } from "../core/outcome.ts";
import { formatDuration } from "../text/text.ts";

/** First backoff step when the backend gave no retry hint. */
export const BACKOFF_BASE_MS = 5_000;
/** No backoff step waits longer than this. */
export const BACKOFF_CAP_MS = 60_000;
/** Default of `--retry-max-wait`, in seconds. */
export const DEFAULT_RETRY_MAX_WAIT_S = 300;

/** What the flags allow: `--retries N` and `--retry-max-wait S`. */
export interface RetryPolicy {
  retries: number;
  maxWaitMs: number;
}

/** What is known about the attempt that just ended. */
export interface AttemptFacts {
  outcome: Pick<Outcome, "status" | "error" | "retry">;
  /** Something already reached the client: streamed updates, a request, stdout bytes. */
  sideEffects: boolean;
  /** The attempt that ended: 0 for the first try, k for the k-th retry. */
  attempt: number;
}

/** The decision: nothing to decide, try again after `afterMs`, or final. */
export type RetryDecision =
  | { kind: "none" }
  | { kind: "retry"; attempt: number; of: number; afterMs: number; reason: string }
  | { kind: "settled"; why: SettledWhy; reason: string };

/** A retry the decision schedules. */
export type ScheduledRetry = Extract<RetryDecision, { kind: "retry" }>;

/** Exponential backoff for retry `k` (1-based), capped, with jitter in [50%, 100%]. */
export function backoffMs(k: number, random: () => number, capMs = BACKOFF_CAP_MS): number {
  const step = Math.min(BACKOFF_BASE_MS * 2 ** Math.max(0, k - 1), capMs);
  return Math.round(step * (0.5 + 0.5 * random()));
}

/** Decides what becomes of an attempt that just ended. */
export function decideRetry(
  facts: AttemptFacts,
  policy: RetryPolicy,
  random: () => number,
): RetryDecision {
  const { outcome, attempt } = facts;
  const of = policy.retries;
  if (outcome.status !== "failed") {
    if (attempt === 0) return { kind: "none" };
    if (outcome.status === "cancelled") {
      return { kind: "settled", why: "stopped", reason: `retry ${attempt} of ${of} was cancelled` };
    }
    return { kind: "settled", why: "succeeded", reason: `retry ${attempt} of ${of} succeeded` };
  }
  const category = outcome.error?.category ?? "unknown";
  const what = category.replace("_", " ");
  const settled = (why: SettledWhy, reason: string): RetryDecision => ({
    kind: "settled",
    why,
    reason,
  });
  if (!RETRYABLE.has(category)) return settled("not_retryable", `${what} is not retryable`);
  if (facts.sideEffects) {
    return settled("not_retryable", `output was already sent, so ${what} is not retried`);
  }
  if (of === 0) return settled("off", "retries are off");
  if (attempt >= of) return settled("exhausted", `${of} of ${of} retries used`);
  const hint = outcome.retry?.afterMs ?? null;
  if (category === "quota" && hint === null) {
    return settled("not_retryable", "quota gave no reset time");
  }
  if (hint !== null && hint > policy.maxWaitMs) {
    const wait = formatDuration(hint);
    const asked = category === "quota"
      ? `quota resets in ${wait}`
      : `the backend asks to wait ${wait} for ${what}`;
    return settled(
      "not_retryable",
      `${asked}, beyond --retry-max-wait ${formatDuration(policy.maxWaitMs)}`,
    );
  }
  const afterMs = hint ??
    backoffMs(attempt + 1, random, Math.min(BACKOFF_CAP_MS, policy.maxWaitMs));
  return { kind: "retry", attempt: attempt + 1, of, afterMs, reason: what };
}
