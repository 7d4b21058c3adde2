/**
 * turnguard plugin API — TypeScript declarations for plugin authors.
 *
 * A plugin module needs no import of turnguard at run time: it default-exports
 * `{ anchors?: Anchor[], detectors?: PublishDetector[], readers?: RecordReader[] }`, and its
 * anchors' `match` and readers' `read` get turnguard's helpers as their second argument
 * (`PluginContext`: `context.classify(text)`, the function the built-in packs use). Save
 * this file next to your plugin (`turnguard types > turnguard.d.ts`) and import its types:
 *
 *   import type { AnchorHit, AnchorInput, PluginModule } from "./turnguard.d.ts";
 *
 * These declarations mirror the schemas turnguard validates plugins with (lib/plugin/api.ts,
 * re-exported by the public module lib/plugin_api.ts); a test holds them equal.
 */

/** The failure categories of an Outcome. */
export type Category =
  | "quota"
  | "rate_limit"
  | "capacity"
  | "auth"
  | "model"
  | "context"
  | "network"
  | "timeout"
  | "crash"
  | "unknown";

/** What an anchor can look at: one log line, one JSON-RPC error object, or a streamed text. */
export type AnchorInput =
  | { kind: "log"; line: string }
  | { kind: "error"; error: { code: unknown; message: unknown; data?: unknown } }
  | { kind: "text"; text: string };

/** The kinds of input an anchor declares it handles. */
export type AnchorInputKind = AnchorInput["kind"];

/** What an anchor's `match` returns when it matches. */
export interface AnchorHit {
  /** The readable cause (not empty). */
  cause: string;
  category?: Category;
  code?: number | string;
  retry?: {
    /** Milliseconds until a retry may work (finite, >= 0). */
    afterMs?: number;
    /** When a retry may work: an ISO 8601 timestamp. */
    at?: string;
    reason?: string;
  };
}

/**
 * What turnguard's classifier makes of a text (`context.classify`): the category
 * (`unknown` when nothing names one) and, when the words say when a retry may work,
 * `afterMs` and `at` (ISO 8601).
 */
export interface TextClass {
  category: Category;
  afterMs?: number;
  at?: string;
}

/**
 * The second argument of every anchor's `match` and record reader's `read`: turnguard's
 * own helpers, the same functions the built-in packs use. Calls are synchronous.
 */
export interface PluginContext {
  /**
   * Classifies a text as turnguard's classifier does with no agent pack: the provider's
   * structured fields, the provider vocabulary (vocabulary.toml) and the generic word rules,
   * most specific first.
   */
  classify(text: string): TextClass;
}

/** An anchor plugin: finds the terminal cause of a failed turn in one kind of input. */
export interface Anchor {
  /** Letters, digits, `.`, `_`, `:`, `-`. */
  id: string;
  /** Higher wins when several anchors match the same turn (default 0). */
  priority?: number;
  /** Agent profiles this anchor is for; absent means every profile. */
  agents?: string[];
  on: AnchorInputKind[];
  match: (input: AnchorInput, context: PluginContext) => AnchorHit | null | undefined;
  /** Where the anchor came from, for messages (filled in by the loader). */
  origin?: string;
}

/** A tool call's merged state, joined by toolCallId across tool_call and tool_call_update. */
export interface ToolCallState {
  toolCallId: string;
  title?: string | null;
  kind?: string | null;
  status?: string | null;
  rawInput?: unknown;
  rawOutput?: unknown;
  content?: unknown;
  _meta?: unknown;
  /** Any other field the agent sent. */
  [key: string]: unknown;
}

/** What a detector says of a tool call it recognises as a publish. */
export interface Detection {
  publish: boolean;
  /** The channel it published to, compared with the turn variable `channel`. */
  channel?: string | null;
}

/** A publish detector plugin: tells whether a tool call published the turn's reply. */
export interface PublishDetector {
  id: string;
  detect: (call: ToolCallState) => Detection | null | undefined;
  origin?: string;
}

/**
 * What a record reader says of one record of an agent's session file (docs/EVIDENCE.md):
 * `prompt` (the turn's own records start here; `answerFirst`: the agent records the final
 * answer before it answers the prompt), `error` (an API error, with its category, code and
 * retry time when the record names them; `retrying`: it tries again; `nextAttemptInMs` and
 * `attempt`: the agent's announced wait before its next attempt and its number for this one),
 * `stop` (the model stopped for `max_tokens` or `refusal`), `reply` (an assistant message;
 * `final` when it ends the turn), `aborted` (the turn ended before its final message),
 * `usage` (the output tokens of one response).
 */
export type RecordEvent =
  | { kind: "prompt"; answerFirst?: boolean }
  | {
    kind: "error";
    /** The cause's words (not empty). */
    cause: string;
    /** The category the record names (wins over the one read from `cause`). */
    category?: Category;
    /**
     * The provider's own code (`insufficient_quota`) or an HTTP status. A category or a
     * string code makes the records' cause outrank the error the agent reported on the wire.
     */
    code?: number | string;
    retrying?: boolean;
    /** Milliseconds until a retry may work, when the record says (finite, >= 0). */
    retryAfterMs?: number;
    /** When a retry may work, an ISO 8601 timestamp, when the record says. */
    retryAt?: string;
    /** The wait the agent announced before its own next attempt, in ms (finite, >= 0). */
    nextAttemptInMs?: number;
    /** The agent's own number for the attempt that failed (an integer >= 1). */
    attempt?: number;
  }
  | { kind: "stop"; stopReason: "max_tokens" | "refusal"; cause?: string }
  | { kind: "reply"; final: boolean; text?: string }
  | { kind: "aborted"; cause: string; category?: Category }
  | { kind: "usage"; output: number };

/** A record reader plugin: reads one record (a parsed JSON line) of a session file. */
export interface RecordReader {
  /** Letters, digits, `.`, `_`, `:`, `-`. */
  id: string;
  /** Agent profiles this reader is for; absent means every profile. */
  agents?: string[];
  read: (record: unknown, context: PluginContext) => RecordEvent | null | undefined;
  /**
   * The records show where a turn ends: after the turn's prompt, a final reply, an error
   * that is not retrying, a stop or an aborted event (or a prompt with `answerFirst`). The
   * proxy then waits for that end, at most `records_wait_ms`, instead of `records_settle_ms`.
   */
  endsTurn?: boolean;
  origin?: string;
}

/** The shape every plugin module's default export must have. */
export interface PluginModule {
  anchors?: Anchor[];
  detectors?: PublishDetector[];
  readers?: RecordReader[];
}
