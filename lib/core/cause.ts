/**
 * A classified cause (`Cause`): the error as the Outcome shows it and its retry hint, and
 * its one builder, `buildCause`, so that every place that finds a cause (an anchor's hit,
 * an agent's error, a record, a notice, a wire contradiction, turnguard's own timeout)
 * gives it the same shape and the same defaults.
 */
import type { Category, RetryHint, Source, TurnError } from "./outcome.ts";
import { retryHint } from "./retry_hint.ts";

/** A classified cause: the error as the Outcome shows it and its retry hint. */
export interface Cause {
  error: TurnError;
  retry: RetryHint;
  /**
   * The message only names the agent's wrapper ("Authentication required", "Internal
   * error"): the words of the real cause, when the turn has them, are elsewhere.
   */
  wrapper?: boolean;
}

/** What a cause is built from; everything but the message and category is optional. */
export interface CauseFields {
  /** The readable cause. */
  message: string;
  category: Category;
  /** The provider's or agent's code (an HTTP status, `insufficient_quota`); default null. */
  code?: number | string | null;
  /** Who found it: an anchor id, `records:<reader>`, `notice`, `wire`; default null. */
  anchor?: string | null;
  /** Where in a file it was found; default null. */
  source?: Source | null;
  /** The retry hint; default the category's with no known time (`retryHint(category)`). */
  retry?: RetryHint;
  /** The message only names the agent's wrapper (see `Cause.wrapper`). */
  wrapper?: boolean;
}

/** The one builder of a Cause. */
export function buildCause(f: CauseFields): Cause {
  return {
    error: {
      code: f.code ?? null,
      message: f.message,
      category: f.category,
      anchor: f.anchor ?? null,
      source: f.source ?? null,
    },
    retry: f.retry ?? retryHint(f.category),
    ...(f.wrapper ? { wrapper: true } : {}),
  };
}
