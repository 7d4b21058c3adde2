/**
 * Classification: gives every failure a category and, where the text says when it
 * recovers, a retry hint. Pure: anchors and the clock are passed in.
 */
import { findCause } from "./anchors.ts";
import type { Cause } from "../core/decide.ts";
import type { Category, RetryHint } from "../core/outcome.ts";
import type { AnchorHit, LoadedAnchor } from "../plugin/api.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import { parseRecovery, retryHint } from "../core/retry_hint.ts";
import { classifiedHead } from "../text/text.ts";

/** A classified failure: its category and the retry hint. */
export interface Classification {
  category: Category;
  retry: RetryHint;
}

/**
 * Classifies a cause. The category is the hit's own when its anchor knows it, else that of
 * the highest-priority `text` anchor matching the cause, else `unknown`. The retry hint is
 * the hit's own, else read from the cause text.
 */
export function classify(
  cause: string,
  hit: AnchorHit | undefined,
  textAnchors: readonly LoadedAnchor[],
  now: number,
  diagnostics: string[] = [],
): Classification {
  let category = hit?.category;
  let retryFromText = hit?.retry;
  if (category === undefined) {
    // The first anchor that gives a category: one that only finds the message (a pack's
    // reader of an error shape that says no category) yields to the next.
    let pool = textAnchors;
    for (;;) {
      const { finding, diagnostics: d } = withPluginBudget(() =>
        findCause(pool, [{ kind: "text", text: cause }])
      );
      diagnostics.push(...d);
      if (finding === null || finding.hit.category !== undefined) {
        category = finding?.hit.category ?? "unknown";
        retryFromText ??= finding?.hit.retry;
        break;
      }
      retryFromText ??= finding.hit.retry;
      pool = pool.filter((a) => a !== finding.anchor);
    }
  }
  const parsed = parseRecovery(classifiedHead(cause), now);
  const fromAt = retryFromText?.at ? Date.parse(retryFromText.at) - now : NaN;
  const afterMs = finiteOrNull(retryFromText?.afterMs) ??
    (Number.isFinite(fromAt) ? Math.max(0, fromAt) : null) ??
    parsed?.afterMs ?? null;
  const at = afterMs !== null ? new Date(now + afterMs).toISOString() : null;
  return { category, retry: retryHint(category, { afterMs, at }) };
}

/** A usable delay (finite, not negative), or null. */
function finiteOrNull(ms: number | undefined): number | null {
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 ? ms : null;
}

/** The cause of a turn turnguard cut short (proxy: silence; run: `--timeout`). */
export function timeoutCause(message: string): Cause {
  return {
    error: { code: null, message, category: "timeout", anchor: null, source: null },
    retry: retryHint("timeout"),
  };
}
