/**
 * What a plugin may ask of turnguard's classifier (`PluginContext`): the category and retry
 * time of a text, read with the provider vocabulary (lib/cause/vocabulary.ts) — what every
 * profile's classifier (lib/cause/classify.ts) gives a cause no anchor of it names — and
 * the recovery time the words state (lib/core/retry_hint.ts). Pure apart from the clock.
 */
import type { PluginContext, TextClass } from "../plugin/api.ts";
import { parseRecovery } from "../core/retry_hint.ts";
import { classifiedHead } from "../text/text.ts";
import { evidenceOf, lookup } from "./vocabulary.ts";

/**
 * The category of `text` by the provider vocabulary, most specific evidence first (a
 * provider's code, its words, an HTTP status, a wrapper's words; `unknown` when none
 * matches), and when the words say a retry may work, relative to `now`.
 */
export function classifyText(text: string, now: number = Date.now()): TextClass {
  const found = lookup(evidenceOf({ kind: "text", text }));
  const out: TextClass = { category: found?.row.category ?? "unknown" };
  const when = parseRecovery(classifiedHead(text), now);
  if (when?.afterMs != null) out.afterMs = when.afterMs;
  if (when?.at != null) out.at = when.at;
  return out;
}

/** The context every built-in anchor and reader is called with (in-process). */
export const PLUGIN_CONTEXT: PluginContext = Object.freeze({
  classify: (text: string) => classifyText(text),
});
