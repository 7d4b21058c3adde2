/**
 * Generic HTTP/gRPC pack: classifies any agent's error by the status codes and words every
 * backend shares, and digs the readable message out of the provider JSON agents pass along.
 * Matches streamed text, JSON-RPC errors and the log lines of profiles that have logs — but
 * only lines logged at error level (`ERROR`, `FATAL`, glog `E`/`F`, `"level":"error"`): a log
 * full of retried 429s at WARN is not a cause by itself. Written with the public plugin API,
 * like a user plugin. Its word rules, and where their wordings come from, are
 * lib/cause/word_rules.ts (public as `RULES`, `readInput` and `wordCategory` of
 * lib/plugin_api.ts, which the other packs use too).
 */
import {
  type AnchorHit,
  type AnchorInput,
  applies,
  type Category,
  defineAnchor,
  definePlugin,
  evidenceOf,
  grpcCategory,
  lookup,
  providerCategory,
  type ProviderError,
  type Reading,
  readInput,
  type Rule,
  RULES,
  statusCategory,
  tidyCause,
  type Tier,
  VOCABULARY_PRIORITY,
} from "../lib/plugin_api.ts";

/** The HTTP status an input carries: the provider's, or a JSON-RPC code that is one. */
function statusOf(input: AnchorInput, provider: ProviderError | null): number | undefined {
  if (provider?.status !== undefined) return provider.status;
  if (input.kind !== "error") return undefined;
  const code = input.error.code;
  return typeof code === "number" && code >= 400 && code <= 599 ? code : undefined;
}

/**
 * Whether a log line was logged at error level, in the formats common loggers write:
 * - a level word `ERROR`/`FATAL`/`CRITICAL` (log4j, Python's logging, Rust's tracing, most
 *   text formats) or a bracketed `[error]`/`[crit]` (nginx's and Apache's error logs);
 * - a glog `E`/`F` prefix (`E0302 10:15:04.123456`);
 * - JSON `"level"`/`"severity"`/`"log.level"` of error, fatal, critical, alert or emergency
 *   (winston's json format, Go's slog, Google Cloud structured logging's `severity`, the
 *   Elastic Common Schema's `log.level`), or a numeric `"level"` of 50 or more (pino and
 *   bunyan: error 50, fatal 60 — pinojs/pino docs/api.md "levels", trentm/node-bunyan
 *   README "Levels");
 * - logfmt `level=error` (go-kit, logrus, slog's text handler) or log15's `lvl=eror`/`lvl=crit`
 *   (inconshreveable/log15 format.go);
 * - winston's simple and cli formats, `error: message` at the start of the line, or after a
 *   timestamp (winstonjs/logform simple.js: `${level}: ${message}`), colorized or not.
 */
export function isErrorLine(line: string): boolean {
  const plain = line.includes(ESC) ? line.replace(SGR, "") : line;
  return /\b(?:ERROR|FATAL|CRITICAL)\b|^[EF]\d{4} \d\d:\d\d/.test(plain) ||
    ERROR_LEVEL_FIELD.test(plain) || BRACKET_LEVEL.test(plain) || WINSTON_LEVEL.test(plain);
}

/** The escape that starts a terminal color code (a colorized logger's level word). */
const ESC = String.fromCharCode(27);
const SGR = new RegExp(`${ESC}\\[[0-9;]*m`, "g");

/** A structured level field naming an error level (JSON, logfmt). */
const ERROR_LEVEL_FIELD =
  /"(?:level|severity|log\.level|lvl)"\s*:\s*(?:"(?:error|err|fatal|critical|crit|alert|emergency)"|[5-9]\d\b)|\b(?:level|lvl|severity)=(?:"?(?:error|err|eror|fatal|crit|critical))\b/i;

/**
 * A bracketed level (nginx's `2026/03/02 10:15:04 [error]`, Apache's `[date] [core:error]`):
 * the first bracket of the line, or the one right after a bracketed date.
 */
const BRACKET_LEVEL = /^(?:[^[]*|\[[^\]]*\]\s*)\[(?:[a-z_]+:)?(?:error|crit|alert|emerg)\]/i;

/** winston's `error: message`, first on the line or after a timestamp word. */
const WINSTON_LEVEL = /^(?:\S*\d\S*\s+)?(?:error|fatal|crit):\s/;

/** A log line's message: without its glog prefix, or what precedes its level word. */
export function logMessage(line: string): string {
  return line.replace(/^[IWEF]\d{4} [\d:.]+ +\d+ [^\]]*\] /, "")
    .replace(/^[^{"]*?\b(?:ERROR|FATAL|CRITICAL)\b[\]:]?\s*/, "");
}

/** The hit for one rule: readable cause, category, status code and RetryInfo delay. */
export function ruleHit(rule: Rule, input: AnchorInput): AnchorHit | null {
  if (input.kind === "log" && !isErrorLine(input.line)) return null;
  const reading = readInput(
    input.kind === "log" ? { kind: "log", line: logMessage(input.line) } : input,
  );
  if (!applies(rule, reading.words)) return null;
  return readingHit(input, reading, rule.category);
}

/**
 * The hit of an input read as `reading`, filed under `category`: its readable cause, the
 * status code, and the provider's RetryInfo delay; null when the cause is empty.
 */
function readingHit(
  input: AnchorInput,
  reading: Reading,
  category: Category,
): AnchorHit | null {
  const cause = tidyCause(reading.cause, "none");
  if (cause === "") return null;
  const hit: AnchorHit = { cause, category };
  const status = statusOf(input, reading.provider);
  if (status !== undefined) hit.code = status;
  if (reading.provider?.retryDelayMs !== undefined) {
    hit.retry = { afterMs: reading.provider.retryDelayMs, reason: "retryDelay" };
  }
  return hit;
}

/**
 * The category the structure of an error gives (HTTP status, gRPC word), for errors whose
 * words match no rule: `{"code": 503}` alone is still capacity.
 */
export function structuralCategory(input: AnchorInput): Category | undefined {
  const { provider } = readInput(input);
  return grpcCategory(provider?.grpc) ?? statusCategory(statusOf(input, provider));
}

/**
 * The hit of the vocabulary (lib/cause/vocabulary.ts) on an error or an error-level log line,
 * in `tiers`: the row's category, the readable cause, its status and RetryInfo delay.
 */
export function vocabularyHit(input: AnchorInput, tiers: readonly Tier[]): AnchorHit | null {
  if (input.kind === "text") return null;
  if (input.kind === "log" && !isErrorLine(input.line)) return null;
  const read = input.kind === "log"
    ? { kind: "log" as const, line: logMessage(input.line) }
    : input;
  const found = lookup(evidenceOf(read), tiers);
  return found === null ? null : readingHit(input, readInput(read), found.row.category);
}

/** The generic pack: its anchors (`generic.*`), loaded as the built-in `builtin:generic`. */
export default definePlugin({
  anchors: [
    // The provider's own structured fields (error type, code, ErrorInfo reason, QuotaFailure
    // ids) decide before any agent wrapper or word rule.
    defineAnchor({
      id: "generic.provider",
      priority: 170,
      on: ["text", "error"],
      match(input) {
        const reading = readInput(input);
        const category = providerCategory(reading.provider);
        if (category === undefined) return null;
        return readingHit(input, reading, category);
      },
    }),
    // The vocabulary: a provider's or runtime's own words above the generic word rules; HTTP
    // statuses and wrappers' words below every rule whose words say what went wrong. It reads
    // errors and error-level log lines, never a turn's streamed text (classify() consults it
    // for a cause found elsewhere).
    defineAnchor({
      id: "generic.vocabulary",
      priority: VOCABULARY_PRIORITY.words,
      on: ["error", "log"],
      match: (input) => vocabularyHit(input, ["words"]),
    }),
    defineAnchor({
      id: "generic.vocabulary-status",
      priority: VOCABULARY_PRIORITY.status,
      on: ["error", "log"],
      match: (input) => vocabularyHit(input, ["status", "wrapper"]),
    }),
    ...RULES.map((rule) =>
      defineAnchor({
        id: rule.id,
        priority: rule.priority,
        on: ["text", "error", "log"],
        match: (input) => ruleHit(rule, input),
      })
    ),
    defineAnchor({
      id: "generic.status",
      priority: 10,
      on: ["error"],
      match(input) {
        const category = structuralCategory(input);
        if (category === undefined) return null;
        const reading = readInput(input);
        const cause = tidyCause(reading.cause, "none");
        if (cause === "") return null;
        const status = statusOf(input, reading.provider);
        return { cause, category, ...(status !== undefined ? { code: status } : {}) };
      },
    }),
  ],
});
