/**
 * Generic HTTP/gRPC pack: classifies any agent's error by the status codes and words every
 * backend shares, and digs the readable message out of the provider JSON agents pass along.
 * Matches streamed text, JSON-RPC errors and the log lines of profiles that have logs — but
 * only lines logged at error level (`ERROR`, `FATAL`, glog `E`/`F`, `"level":"error"`): a log
 * full of retried 429s at WARN is not a cause by itself. Written with the public plugin API,
 * like a user plugin.
 *
 * Wordings, and where they come from:
 * - 429 / RESOURCE_EXHAUSTED / "Resource has been exhausted (e.g. check quota)." / "Too Many
 *   Requests": Google's error model (https://cloud.google.com/apis/design/errors) as agy and
 *   gemini-cli relay it (google-antigravity/antigravity-cli#962, gemini-cli
 *   packages/core/src/utils/googleQuotaErrors.test.ts).
 * - "rate_limit_error", "overloaded_error" (HTTP 529), "authentication_error",
 *   "permission_error", "not_found_error", "request_too_large", "api_error":
 *   https://docs.anthropic.com/en/api/errors; "API Error: 529 {...overloaded_error...}"
 *   (anthropics/claude-code#39745, #41628).
 * - "insufficient_quota" / "You exceeded your current quota", "context_length_exceeded",
 *   "model_not_found" / "The model `x` does not exist or you do not have access to it.":
 *   https://platform.openai.com/docs/guides/error-codes.
 * - "exceeded retry limit, last status: 429 Too Many Requests", "stream disconnected before
 *   completion", "Connection failed: error sending request": openai/codex
 *   codex-rs/core/src/error.rs.
 * - DEADLINE_EXCEEDED, UNAVAILABLE, UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND: gRPC status
 *   codes (https://grpc.io/docs/guides/status-codes/).
 * - ECONNREFUSED / ECONNRESET / "socket hang up" / "fetch failed": Node.js network errors
 *   (https://nodejs.org/api/errors.html#common-system-errors).
 * - "terminated" (undici's TypeError when a response body's socket closes; gemini-cli sends
 *   it as `{"code":500,"message":"terminated"}`, Claude Code as "API Error: terminated"),
 *   "Unterminated string in JSON at position N" / "JSON Parse error: Unterminated string"
 *   (V8's and JavaScriptCore's JSON.parse on a body cut short, as Claude Code relays them):
 *   recorded in tests/agents/corpus/{gemini-cli,claude-code-acp,claude-agent-acp}.
 */
import {
  type AnchorHit,
  type AnchorInput,
  type Category,
  defineAnchor,
  definePlugin,
  errorWords,
  evidenceOf,
  grpcCategory,
  inputText,
  lookup,
  parseProviderError,
  providerCategory,
  type ProviderError,
  rpcProviderError,
  statusCategory,
  tidyCause,
  type Tier,
  VOCABULARY_PRIORITY,
} from "../lib/plugin_api.ts";

/** One category rule: an anchor id, its priority and the words that give the category. */
interface Rule {
  id: string;
  category: Category;
  priority: number;
  /** Matches the words of the error (case-insensitive patterns). */
  words: RegExp;
  /** Status words matched case-sensitively (gRPC codes are upper case). */
  codes?: RegExp;
  /** Words that veto the rule (`per minute` is a rate limit, not a quota). */
  unless?: RegExp;
}

/** Most specific first: a quota outranks the 429 that carries it. */
export const RULES: readonly Rule[] = [
  {
    id: "generic.quota",
    category: "quota",
    priority: 90,
    words:
      /individual quota|quota (?:reached|exceeded|exhausted)|exceeded your current quota|(?:daily|monthly) quota|api usage limits|insufficient_quota|usage limit|spend limit|credit balance|out of (?:usage )?credits|billing|exhausted your capacity|payment required/i,
    codes: /\bQUOTA_EXHAUSTED\b|\b402\b/,
    unless: /per ?minute|PerMinute/i,
  },
  {
    id: "generic.rate-limit",
    category: "rate_limit",
    priority: 80,
    words: /rate[ _-]?limit|too many requests|resource has been exhausted/i,
    codes: /\b429\b|\bRESOURCE_EXHAUSTED\b|\bRATE_LIMIT_EXCEEDED\b/,
  },
  {
    id: "generic.capacity",
    category: "capacity",
    priority: 70,
    words: /overloaded|over capacity|no capacity|high demand|high traffic/i,
    codes: /\b529\b|\bUNAVAILABLE\b|\bMODEL_CAPACITY_EXHAUSTED\b/,
  },
  {
    id: "generic.auth",
    category: "auth",
    priority: 60,
    words:
      /unauthori[sz]ed|authentication|invalid (?:x-)?api[ _-]?key|api key not valid|not logged in|login required|please run \/login|forbidden|access token|permission_error|insufficient permissions|location is not supported|region,? or territory not supported|not available in your (?:country|region)|request not allowed/i,
    codes: /\b(?:401|403)\b|\bUNAUTHENTICATED\b|\bPERMISSION_DENIED\b/,
  },
  {
    id: "generic.context",
    category: "context",
    priority: 50,
    words:
      /context (?:length|window)|maximum context|prompt is too long|too many tokens|input token count|context_length_exceeded|request_too_large/i,
    codes: /\b413\b/,
  },
  {
    id: "generic.model",
    category: "model",
    priority: 40,
    words:
      /model (?:not found|unreachable|is not available|does not exist)|unknown model|invalid model|model_not_found|not_found_error|is not found for api version|does not exist or you do not have access|may not exist or you may not have access/i,
    codes: /\bNOT_FOUND\b/,
  },
  {
    id: "generic.timeout",
    category: "timeout",
    priority: 30,
    words: /timed? ?out|timeout|ETIMEDOUT/i,
    codes: /\bDEADLINE_EXCEEDED\b|\b504\b/,
  },
  {
    id: "generic.network",
    category: "network",
    priority: 20,
    words:
      /ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EPIPE|connection (?:refused|reset|closed|error|failed)|socket hang up|network error|fetch failed|stream disconnected|error sending request|(?:^|: )terminated\s*$|unterminated string in json|json parse error: unterminated/i,
  },
  {
    // A server's or gateway's catch-all ("something went wrong upstream"): below every rule
    // whose words say what went wrong (a refused connection behind a gateway's 500).
    id: "generic.server-error",
    category: "capacity",
    priority: 15,
    words: /service unavailable|bad gateway|internal server error|server_error|api_error/i,
    codes: /\b(?:500|502|503)\b/,
  },
];

/** What an input says: its readable message, the provider's fields and all its words. */
interface Reading {
  cause: string;
  provider: ProviderError | null;
  words: string;
}

/** Reads an input once: the provider error in it (if any) and the words rules look at. */
export function readInput(input: AnchorInput): Reading {
  if (input.kind === "error") {
    const provider = rpcProviderError(input.error);
    const words = [
      errorWords(input.error),
      provider?.grpc,
      provider?.reason,
      provider?.type,
      provider?.status,
    ].filter((w) => w !== undefined).join(" ");
    return { cause: provider?.message ?? inputText(input), provider, words };
  }
  const text = inputText(input);
  const provider = parseProviderError(text);
  return { cause: provider?.message ?? text, provider, words: text };
}

/** Whether a rule's words (and not its veto) are in `words`. */
function applies(rule: Rule, words: string): boolean {
  if (rule.unless?.test(words)) return false;
  return rule.words.test(words) || (rule.codes?.test(words) ?? false);
}

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
 * The category the words of a cause give by themselves (the first rule, most specific first,
 * that applies). Packs use it where an agent's wrapper says less than the words it wraps:
 * claude-agent-acp files a refused connection or a timeout under errorKind `server_error`,
 * gemini-cli sends a failed fetch or a missing model under JSON-RPC code 500.
 */
export function wordCategory(words: string): Category | undefined {
  return lookup({ text: words }, ["words"])?.row.category ??
    RULES.find((rule) => applies(rule, words))?.category;
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
