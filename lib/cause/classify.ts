/**
 * Classification: gives every failure a category and, where the text says when it
 * recovers, a retry hint. Pure: the profile's classifier and the clock are passed in.
 */
import { findCause, tryMatch } from "./anchors.ts";
import type { Classifier } from "./classifier.ts";
import { buildCause, type Cause } from "../core/cause.ts";
import type { Category, RetryHint } from "../core/outcome.ts";
import type { AnchorHit } from "../plugin/api.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import { parseRecovery, retryHint } from "../core/retry_hint.ts";
import { classifiedHead } from "../text/text.ts";
import { evidenceOf, lookup, VOCABULARY_PRIORITY } from "./vocabulary.ts";

/** A classified failure: its category and the retry hint. */
export interface Classification {
  category: Category;
  retry: RetryHint;
}

/**
 * Classifies a cause. The category is the hit's own when its anchor knows it, else that of
 * the highest-priority `text` anchor of the profile matching the cause — the provider
 * vocabulary (lib/cause/vocabulary.ts) ranking among them as its error anchors do — else
 * `unknown` (an
 * anchor that only finds the message, a pack's reader of an error shape that says no
 * category, yields to the next). The retry hint is the hit's own, else the first one a
 * matching text anchor gives, else read from the cause text.
 */
export function classify(
  cause: string,
  hit: AnchorHit | undefined,
  classifier: Classifier,
  now: number,
  diagnostics: string[] = [],
): Classification {
  let category = hit?.category;
  let retryFromText = hit?.retry;
  if (category === undefined) {
    const input = { kind: "text" as const, text: cause };
    // The vocabulary's tiers, each where its anchors rank among the text anchors.
    const pending = [
      { priority: VOCABULARY_PRIORITY.words, tiers: ["code", "words"] as const },
      { priority: VOCABULARY_PRIORITY.status, tiers: ["status", "wrapper"] as const },
    ];
    const vocabulary = (below: number): Category | undefined => {
      while (pending.length > 0 && pending[0].priority > below) {
        const found = lookup(evidenceOf(input), pending.shift()!.tiers);
        if (found !== null) return found.row.category;
      }
      return undefined;
    };
    category = withPluginBudget(() => {
      for (const anchor of classifier.text) {
        const known = vocabulary(anchor.priority);
        if (known !== undefined) return known;
        const found = tryMatch(anchor, input, diagnostics);
        if (!found) continue;
        retryFromText ??= found.retry;
        if (found.category !== undefined) return found.category;
      }
      return vocabulary(-Infinity) ?? "unknown";
    });
  }
  const parsed = parseRecovery(classifiedHead(cause), now);
  const fromAt = retryFromText?.at ? Date.parse(retryFromText.at) - now : NaN;
  const afterMs = finiteOrNull(retryFromText?.afterMs) ??
    (Number.isFinite(fromAt) ? Math.max(0, fromAt) : null) ??
    parsed?.afterMs ?? null;
  const at = afterMs !== null ? new Date(now + afterMs).toISOString() : null;
  return { category, retry: retryHint(category, { afterMs, at }) };
}

/**
 * The failure a streamed text reads as, when the profile's text anchors give it a
 * category: agents stream the cause as a notice before they answer with a bare error
 * ("Authentication required"). The first text anchor that matches decides; one that gives
 * no category makes the text no failure.
 */
export function textCause(
  text: string,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): Cause | null {
  if (classifier.text.length === 0) return null;
  const found = findCause(classifier, [{ kind: "text", text }]);
  diagnostics.push(...found.diagnostics);
  if (!found.finding?.hit.category) return null;
  const { hit, anchor } = found.finding;
  const { category, retry } = classify(hit.cause, hit, classifier, now, diagnostics);
  return buildCause({ code: hit.code, message: hit.cause, category, anchor: anchor.id, retry });
}

/** A usable delay (finite, not negative), or null. */
function finiteOrNull(ms: number | undefined): number | null {
  return ms !== undefined && Number.isFinite(ms) && ms >= 0 ? ms : null;
}

/** The cause of a turn turnguard cut short (proxy: silence; run: `--timeout`). */
export function timeoutCause(message: string): Cause {
  return buildCause({ message, category: "timeout" });
}
