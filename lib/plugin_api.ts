/**
 * The public plugin API: the one module of turnguard the built-in packs (plugins/) import,
 * and the one a user plugin's types come from (`import type`, erased when it loads; without
 * a checkout `turnguard types` prints the same declarations, lib/types/plugin_api.d.ts). A
 * plugin default-exports `definePlugin({ anchors, detectors, readers })`; its anchors'
 * `match(input, context)` and readers' `read(record, context)` get `context.classify`
 * (below: `classifyText`), in-process or in a user plugin's worker alike, so a user plugin
 * classifies with the function the packs import. Everything here is a re-export of the one
 * place it is defined, or a small reader of agent-controlled JSON that trusts no shape.
 */
import { isObject } from "./text/json.ts";

// The shapes turnguard validates, and the typed identity helpers that write them.
export {
  type Anchor,
  type AnchorHit,
  type AnchorInput,
  type AnchorInputKind,
  defineAnchor,
  definePlugin,
  definePublishDetector,
  defineRecordReader,
  type Detection,
  type PluginContext,
  type PluginModule,
  type PublishDetector,
  type RecordEvent,
  type RecordReader,
  type TextClass,
  type ToolCallState,
} from "./plugin/api.ts";
export type { Category, RetryHint } from "./core/outcome.ts";

// Causes and retry hints: the one builder of each, and reading a recovery time in words.
export { buildCause, type Cause, type CauseFields } from "./core/cause.ts";
export { parseDuration, parseRecovery, retryHint } from "./core/retry_hint.ts";

// Classifying: a text as turnguard's classifier reads it (what `context.classify` answers),
// the generic word rules and the category words give by themselves, an input read once (its
// provider error, message and words), the text an anchor reads from an input, and a raw
// cause trimmed to one readable line.
export { classifyText, PLUGIN_CONTEXT } from "./cause/text_class.ts";
export {
  applies,
  type Reading,
  readInput,
  type Rule,
  RULES,
  wordCategory,
} from "./cause/word_rules.ts";
export { inputText } from "./cause/input_text.ts";
export { tidyCause } from "./cause/anchors.ts";

// Providers' error bodies: parsed out of text or a JSON-RPC error, and the categories of an
// HTTP status and of a gRPC status word.
export {
  errorWords,
  grpcCategory,
  NO_QUOTA,
  parseProviderError,
  type ProviderError,
  rpcProviderError,
  statusCategory,
} from "./cause/provider_error.ts";

// The provider vocabulary, tier by tier (for a pack that ranks its tiers among its anchors).
export {
  evidenceOf,
  lookup,
  providerCategory,
  type Tier,
  VOCABULARY_PRIORITY,
} from "./cause/vocabulary.ts";

// Publish detectors that read a tool call's command line as a shell would split it.
export { detectCommand, type PublishCommandSpec } from "./publish/commands.ts";

/** A parsed JSON value as an object (not an array, not null), or null. */
export function obj(value: unknown): Record<string, unknown> | null {
  return isObject(value) ? value : null;
}

/** A string value, or null. */
export function str(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

/** The text of message content: a string, or the `text` of `{type:"text"}` blocks joined. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => {
    const block = obj(b);
    const textual = block?.type === "text" || (block !== null && block.type === undefined);
    return textual && typeof block?.text === "string" ? block.text : "";
  }).join("");
}

/** The first HTTP status an error sentence names (`API Error: 529 ...`), if any. */
export function statusIn(text: string): number | undefined {
  const m = text.match(/\b(?:API Error|status|HTTP)[: ]+([1-5]\d\d)\b/i);
  return m ? Number(m[1]) : undefined;
}
