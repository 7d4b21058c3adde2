/**
 * The generic word rules: the status codes and words every backend shares, each naming one
 * category, most specific first (a quota outranks the 429 that carries it). The generic pack
 * (plugins/generic.ts) makes each rule an anchor; `wordCategory` gives the category the words
 * of a cause give by themselves, for the packs and for a plugin's `context.classify`
 * (lib/cause/text_class.ts). `readInput` reads an anchor input once: the provider error in
 * it, its readable message, and the words the rules look at.
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
import type { Category } from "../core/outcome.ts";
import type { AnchorInput } from "../plugin/api.ts";
import { inputText } from "./input_text.ts";
import {
  errorWords,
  parseProviderError,
  type ProviderError,
  rpcProviderError,
} from "./provider_error.ts";
import { lookup } from "./vocabulary.ts";

/** One category rule: an anchor id, its priority and the words that give the category. */
export interface Rule {
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
export interface Reading {
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
export function applies(rule: Rule, words: string): boolean {
  if (rule.unless?.test(words)) return false;
  return rule.words.test(words) || (rule.codes?.test(words) ?? false);
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
