/**
 * What a plugin may ask of turnguard's classifier (`PluginContext`): the category and retry
 * time of a text as the classifier of a profile with no agent pack reads it
 * (lib/cause/classify.ts, with the generic pack's anchors): the provider's structured fields,
 * the provider vocabulary's codes and words (lib/cause/vocabulary.ts), the generic word rules
 * (lib/cause/word_rules.ts), then the vocabulary's statuses and wrappers' words — and the
 * recovery time the words state (lib/core/retry_hint.ts). Pure apart from the clock.
 */
import type { PluginContext, TextClass } from "../plugin/api.ts";
import { parseRecovery } from "../core/retry_hint.ts";
import { classifiedHead } from "../text/text.ts";
import { evidenceOf, lookup, providerCategory } from "./vocabulary.ts";
import { applies, readInput, RULES } from "./word_rules.ts";

/**
 * The category of `text`, most specific evidence first (a provider's code or type, its
 * words, the generic rules' words and codes, an HTTP status, a wrapper's words; `unknown`
 * when none names one), and when the words say a retry may work, relative to `now`.
 */
export function classifyText(text: string, now: number = Date.now()): TextClass {
  const input = { kind: "text" as const, text };
  const reading = readInput(input);
  const evidence = evidenceOf(input);
  const category = providerCategory(reading.provider) ??
    lookup(evidence, ["code", "words"])?.row.category ??
    RULES.find((rule) => applies(rule, reading.words))?.category ??
    lookup(evidence, ["status", "wrapper"])?.row.category ?? "unknown";
  const out: TextClass = { category };
  const when = parseRecovery(classifiedHead(text), now);
  if (when?.afterMs != null) out.afterMs = when.afterMs;
  if (when?.at != null) out.at = when.at;
  return out;
}

/** The context every built-in anchor and reader is called with (in-process). */
export const PLUGIN_CONTEXT: PluginContext = Object.freeze({
  classify: (text: string) => classifyText(text),
});
