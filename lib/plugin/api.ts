/**
 * The shapes of the plugin API, as turnguard validates them: what a plugin module exports
 * (`{ anchors?: [...], detectors?: [...], readers?: [...] }`), what its functions are called
 * with and what they answer. Plugin authors and the built-in packs import the public module,
 * lib/plugin_api.ts, which re-exports these with the helpers; a user plugin needs no import
 * of turnguard at run time (its functions get the helpers that classify as `context`).
 */
import * as v from "valibot";
import { once } from "../once.ts";
import { type Category, CategorySchema } from "../core/outcome.ts";
import type { ToolCallState } from "../acp/tool_calls.ts";

/** The id of an anchor, detector or record reader, in plugins and config files alike. */
export const IdSchema = once(() =>
  v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:-]+$/, "id must be letters, digits, . _ : -"))
);

/** What an anchor can look at: one log line, one JSON-RPC error object, or a streamed text. */
export const AnchorInputSchema = once(() =>
  v.variant("kind", [
    v.object({ kind: v.literal("log"), line: v.string() }),
    v.object({
      kind: v.literal("error"),
      error: v.object({ code: v.unknown(), message: v.unknown(), data: v.optional(v.unknown()) }),
    }),
    v.object({ kind: v.literal("text"), text: v.string() }),
  ])
);
/** One input an anchor is called with (see AnchorInputSchema). */
export type AnchorInput = v.InferOutput<ReturnType<typeof AnchorInputSchema>>;
/** The kinds of input an anchor declares it handles. */
export type AnchorInputKind = AnchorInput["kind"];

const badAfterMs = (issue: v.BaseIssue<unknown>) =>
  `retry.afterMs must be a finite number of milliseconds >= 0, not ${issue.received}`;
const badAt = (issue: v.BaseIssue<unknown>) =>
  `retry.at must be an ISO 8601 timestamp, not ${issue.received}`;

const badEventAfterMs = (issue: v.BaseIssue<unknown>) =>
  `retryAfterMs must be a finite number of milliseconds >= 0, not ${issue.received}`;
const badEventAt = (issue: v.BaseIssue<unknown>) =>
  `retryAt must be an ISO 8601 timestamp, not ${issue.received}`;
const badNextAttempt = (issue: v.BaseIssue<unknown>) =>
  `nextAttemptInMs must be a finite number of milliseconds >= 0, not ${issue.received}`;
const badAttempt = (issue: v.BaseIssue<unknown>) =>
  `attempt must be an integer >= 1, not ${issue.received}`;

/**
 * What an anchor reports when it matches: the readable cause and what is known of it. The
 * retry hint is checked here, once, so a hint that is no time (`at: "tomorrow"`,
 * `afterMs: NaN`) makes the hit invalid (a diagnostic) instead of reaching the outcome.
 */
export const AnchorHitSchema = once(() =>
  v.object({
    cause: v.pipe(v.string(), v.minLength(1)),
    category: v.optional(CategorySchema),
    code: v.optional(v.union([v.number(), v.string()])),
    retry: v.optional(v.object({
      /** Milliseconds until a retry may work. */
      afterMs: v.optional(
        v.pipe(v.number(badAfterMs), v.finite(badAfterMs), v.minValue(0, badAfterMs)),
      ),
      /** When a retry may work; an ISO 8601 timestamp that Date.parse reads. */
      at: v.optional(v.pipe(
        v.string(badAt),
        v.isoTimestamp(badAt),
        v.check((at) => !Number.isNaN(Date.parse(at)), badAt),
      )),
      reason: v.optional(v.string()),
    })),
  })
);
/** What an anchor's `match` returns when it matches (see AnchorHitSchema). */
export type AnchorHit = v.InferOutput<ReturnType<typeof AnchorHitSchema>>;

/**
 * What turnguard's classifier makes of a text, as a plugin gets it (`context.classify`):
 * the category (`unknown` when nothing names one) and, when the words say when a retry may
 * work, `afterMs` and `at` (ISO 8601), ready for an AnchorHit's `retry` or a record event's
 * `retryAfterMs` / `retryAt`.
 */
export interface TextClass {
  category: Category;
  afterMs?: number;
  at?: string;
}

/**
 * The second argument of every anchor's `match` and record reader's `read`: turnguard's own
 * helpers, the same functions the built-in packs import from lib/plugin_api.ts. In a user
 * plugin's worker each call is answered by turnguard's main thread, synchronously.
 */
export interface PluginContext {
  /**
   * Classifies a text as turnguard's classifier does with no agent pack: the provider's
   * structured fields, the provider vocabulary (vocabulary.toml; docs/VOCABULARY.md) and the
   * generic word rules, most specific first.
   */
  classify(text: string): TextClass;
}

const fn = <T extends (...args: never[]) => unknown>(message: string) =>
  v.custom<T>((value) => typeof value === "function", message);

/** An anchor plugin: finds the terminal cause of a failed turn in one kind of input. */
export const AnchorSchema = once(() =>
  v.strictObject({
    id: IdSchema(),
    /** Higher wins when several anchors match the same turn. */
    priority: v.optional(v.number(), 0),
    /** Agent profiles this anchor is for; absent means every profile. */
    agents: v.optional(v.array(v.string())),
    on: v.pipe(v.array(v.picklist(["log", "error", "text"])), v.minLength(1)),
    match: fn<(input: AnchorInput, context: PluginContext) => AnchorHit | null | undefined>(
      "match must be a function",
    ),
    /** Where the anchor came from, for messages (filled in by the loader). */
    origin: v.optional(v.string()),
  })
);
/** An anchor as a plugin writes it (see AnchorSchema). */
export type Anchor = v.InferInput<ReturnType<typeof AnchorSchema>>;
/** An anchor after validation, with defaults applied. */
export type LoadedAnchor = v.InferOutput<ReturnType<typeof AnchorSchema>>;

/** A tool call's merged state (lib/acp/tool_calls.ts: the protocol's shape, re-exported here). */
export { type ToolCallState, ToolCallStateSchema } from "../acp/tool_calls.ts";

/** What a detector says of a tool call it recognises as a publish. */
export const DetectionSchema = once(() =>
  v.object({
    publish: v.boolean(),
    channel: v.optional(v.nullable(v.string())),
  })
);
/** What a detector's `detect` returns for a publish (see DetectionSchema). */
export type Detection = v.InferOutput<ReturnType<typeof DetectionSchema>>;

/** A publish detector plugin: tells whether a tool call published the turn's reply. */
export const PublishDetectorSchema = once(() =>
  v.strictObject({
    id: IdSchema(),
    detect: fn<(call: ToolCallState) => Detection | null | undefined>("detect must be a function"),
    origin: v.optional(v.string()),
  })
);
/** A publish detector as a plugin writes it (see PublishDetectorSchema). */
export type PublishDetector = v.InferInput<ReturnType<typeof PublishDetectorSchema>>;
/** A publish detector after validation. */
export type LoadedPublishDetector = v.InferOutput<ReturnType<typeof PublishDetectorSchema>>;

/**
 * What a record reader says of one record of an agent's session file (docs/EVIDENCE.md):
 * - `prompt`: the user's prompt was recorded: the turn's own records start here (what came
 *   before it in the appended bytes belongs to an earlier turn); `answerFirst`: the agent
 *   records a prompt's final answer before it answers the prompt, so a prompt with no final
 *   reply after it ended before its final message;
 * - `error`: the turn hit an API error, with the cause's words; `category` and `code` when
 *   the record names them (a category, or a provider's own code such as
 *   `insufficient_quota`, outranks the error the agent reported on the wire: the most
 *   specific evidence wins); `retryAfterMs` or `retryAt` (ISO 8601) when the record says
 *   when a retry may work (they win over a time read from the words); `retrying`: the agent
 *   said it tries again (an error a later `reply` with `final` recovers from);
 *   `nextAttemptInMs`: the wait the agent announced before its own next attempt (not the
 *   provider's "retry may work after": a spent quota's reset stays `retryAfterMs`/`retryAt`);
 *   `attempt`: the agent's own number for the attempt that failed, when it numbers them;
 * - `stop`: the model stopped for `stopReason` (`max_tokens`, `refusal`), with its words;
 * - `reply`: an assistant message with content; `final` when it is the turn's final
 *   answer (the model ended its turn), `text` its text when known;
 * - `aborted`: the turn ended before its final message (the agent recorded it so), with its
 *   `category` when the record names one;
 * - `usage`: the model's usage for one response, `output` the tokens it produced (reasoning
 *   excluded): output counted while the agent recorded no content from the response (no
 *   `reply` between it and the previous `usage` or the prompt) is an answer the agent dropped.
 */
export const RecordEventSchema = once(() =>
  v.variant("kind", [
    v.object({ kind: v.literal("prompt"), answerFirst: v.optional(v.boolean()) }),
    v.object({
      kind: v.literal("error"),
      cause: v.pipe(v.string(), v.minLength(1)),
      category: v.optional(CategorySchema),
      code: v.optional(v.union([v.number(), v.string()])),
      retrying: v.optional(v.boolean()),
      retryAfterMs: v.optional(
        v.pipe(
          v.number(badEventAfterMs),
          v.finite(badEventAfterMs),
          v.minValue(0, badEventAfterMs),
        ),
      ),
      retryAt: v.optional(v.pipe(
        v.string(badEventAt),
        v.isoTimestamp(badEventAt),
        v.check((at) => !Number.isNaN(Date.parse(at)), badEventAt),
      )),
      nextAttemptInMs: v.optional(
        v.pipe(
          v.number(badNextAttempt),
          v.finite(badNextAttempt),
          v.minValue(0, badNextAttempt),
        ),
      ),
      attempt: v.optional(
        v.pipe(v.number(badAttempt), v.integer(badAttempt), v.minValue(1, badAttempt)),
      ),
    }),
    v.object({
      kind: v.literal("stop"),
      stopReason: v.picklist(["max_tokens", "refusal"]),
      cause: v.optional(v.string()),
    }),
    v.object({ kind: v.literal("reply"), final: v.boolean(), text: v.optional(v.string()) }),
    v.object({
      kind: v.literal("aborted"),
      cause: v.pipe(v.string(), v.minLength(1)),
      category: v.optional(CategorySchema),
    }),
    v.object({ kind: v.literal("usage"), output: v.pipe(v.number(), v.minValue(0)) }),
  ])
);
/** What a record reader's `read` returns for a record it understands. */
export type RecordEvent = v.InferOutput<ReturnType<typeof RecordEventSchema>>;

/**
 * A record reader plugin: reads one record (a parsed JSON line) of an agent's session file
 * and says what it shows of the turn (RecordEventSchema), or nothing.
 */
export const RecordReaderSchema = once(() =>
  v.strictObject({
    id: IdSchema(),
    /** Agent profiles this reader is for; absent means every profile. */
    agents: v.optional(v.array(v.string())),
    read: fn<(record: unknown, context: PluginContext) => RecordEvent | null | undefined>(
      "read must be a function",
    ),
    /**
     * The reader's records show where a turn ends (docs/EVIDENCE.md "The turn's end"):
     * after the turn's `prompt`, the last of its events is a final `reply`, an `error` that
     * is not `retrying`, a `stop` or an `aborted` — or the prompt says `answerFirst` (its
     * records are complete once the agent answered). The proxy then reads the records as
     * soon as that end is there, waiting for it at most the profile's `records_wait_ms`;
     * without it, once, after `records_settle_ms`.
     */
    endsTurn: v.optional(v.boolean()),
    origin: v.optional(v.string()),
  })
);
/** A record reader as a plugin writes it (see RecordReaderSchema). */
export type RecordReader = v.InferInput<ReturnType<typeof RecordReaderSchema>>;
/** A record reader after validation. */
export type LoadedRecordReader = v.InferOutput<ReturnType<typeof RecordReaderSchema>>;

/** The shape every plugin module's default export must have. */
export const PluginModuleSchema = once(() =>
  v.strictObject({
    anchors: v.optional(v.array(AnchorSchema()), []),
    detectors: v.optional(v.array(PublishDetectorSchema()), []),
    readers: v.optional(v.array(RecordReaderSchema()), []),
  })
);
/** A plugin module's default export as written (see PluginModuleSchema). */
export type PluginModule = v.InferInput<ReturnType<typeof PluginModuleSchema>>;

/** Typed identity helper for anchor authors. */
export function defineAnchor(anchor: Anchor): Anchor {
  return anchor;
}

/** Typed identity helper for detector authors. */
export function definePublishDetector(detector: PublishDetector): PublishDetector {
  return detector;
}

/** Typed identity helper for record reader authors. */
export function defineRecordReader(reader: RecordReader): RecordReader {
  return reader;
}

/** Typed identity helper for a plugin module's default export. */
export function definePlugin(plugin: PluginModule): PluginModule {
  return plugin;
}
