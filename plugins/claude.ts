/**
 * claude-agent-acp / claude-code-acp pack. The adapter fails a prompt with
 * `RequestError.internalError({ errorKind }, result)`: JSON-RPC -32603, the message
 * `Internal error: <Claude Code's sentence>` and `data.errorKind`, the SDK's
 * `SDKAssistantMessageError` (agentclientprotocol/claude-agent-acp src/acp-agent.ts, and the
 * kinds as src/session-failure-extension.ts `providerFailureCategory` maps them:
 * authentication_failed, oauth_org_not_allowed, billing_error, account_on_hold, rate_limit,
 * overloaded, invalid_request, model_not_found, max_output_tokens, server_error, unknown).
 * Older adapters sent `RequestError.internalError(undefined, result)`, so the sentence alone
 * must classify too. Claude Code's sentences:
 * - "API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"
 *   (anthropics/claude-code#39745), "API Error: 429 {...rate_limit_error...}";
 * - "Credit balance is too low" (anthropics/claude-code#4208, #55469); "Your credit balance is
 *   too low to access the Anthropic API." (same threads);
 * - "You've hit your limit · resets 2pm (America/New_York)" (anthropics/claude-code#47486),
 *   "You've hit your monthly spend limit · raise it at claude.ai/settings/usage"
 *   (anthropics/claude-code#67939), "You've hit your org's monthly spend limit";
 * - "Claude AI usage limit reached|1753088400" (anthropics/claude-code#4070): epoch seconds;
 * - "Invalid API key · Please run /login", "Failed to authenticate. API Error: 401 OAuth access
 *   token has expired.", "Please run /login" (claude-agent-acp src/acp-agent.ts);
 * - "Prompt is too long" (https://docs.anthropic.com/en/api/errors, invalid_request_error).
 */
import {
  type AnchorHit,
  type Category,
  defineAnchor,
  definePlugin,
  readInput,
  tidyCause,
  wordCategory,
} from "../lib/plugin_api.ts";

/** Categories of the adapter's `data.errorKind`; absent kinds are left to the words. */
export const ERROR_KIND_CATEGORY: Readonly<Record<string, Category>> = {
  authentication_failed: "auth",
  oauth_org_not_allowed: "auth",
  billing_error: "quota",
  account_on_hold: "quota",
  rate_limit: "rate_limit",
  overloaded: "capacity",
  server_error: "capacity",
  model_not_found: "model",
  max_output_tokens: "context",
};

/** Kinds that only say "something failed"; the words of the cause may say more. */
const GENERIC_KINDS = new Set(["server_error", "unknown"]);

/**
 * Sentences that mean a subscription or billing limit, whatever errorKind says. The words
 * before `limit` are bounded (linear time on any text).
 */
const USAGE_LIMIT =
  /you've hit your (?:[\w']+ ){0,6}limit|usage limit reached|reached your specified api usage limits|spend limit|credit balance (?:is )?too low|out of (?:usage )?credits/i;
/** `Claude AI usage limit reached|<epoch seconds>`. */
const LIMIT_EPOCH = /usage limit reached\|(\d{9,11})\b/i;

/**
 * The category of an error Claude Code files under `kind` with the words `cause`: a usage
 * or billing limit whatever the kind; for a kind that only says "something failed" what
 * its words say (a transport failure filed as `server_error`: "API Error: Connection
 * refused ... (ECONNREFUSED)", "Request timed out"); else the kind's. The error-kind anchor
 * and the transcript reader (plugins/claude_records.ts) read it alike.
 */
export function kindCategory(kind: string, cause: string): Category | undefined {
  if (USAGE_LIMIT.test(cause)) return "quota";
  return (GENERIC_KINDS.has(kind) ? wordCategory(cause) : undefined) ??
    ERROR_KIND_CATEGORY[kind];
}

function dataKind(data: unknown): string | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const kind = (data as Record<string, unknown>).errorKind;
  return typeof kind === "string" ? kind : undefined;
}

/** The retry `at` of `usage limit reached|<epoch>`. */
function epochRetry(text: string): AnchorHit["retry"] | undefined {
  const m = text.match(LIMIT_EPOCH);
  return m ? { at: new Date(Number(m[1]) * 1000).toISOString(), reason: "resets" } : undefined;
}

/** The claude pack: its anchors (`claude.*`), loaded as the built-in `builtin:claude`. */
export default definePlugin({
  anchors: [
    defineAnchor({
      id: "claude.error-kind",
      priority: 160,
      on: ["error"],
      match(input) {
        if (input.kind !== "error") return null;
        const kind = dataKind(input.error.data);
        if (kind === undefined) return null;
        const reading = readInput(input);
        const cause = tidyCause(reading.cause, "none");
        if (cause === "") return null;
        const hit: AnchorHit = { cause };
        // The kind is the adapter's wrapper: a transport failure it files as `server_error`
        // ("API Error: Connection refused ... (ECONNREFUSED)", "Request timed out") is what
        // its words say.
        const category = kindCategory(kind, cause);
        if (category !== undefined) hit.category = category;
        if (reading.provider?.status !== undefined) hit.code = reading.provider.status;
        const retry = epochRetry(cause);
        if (retry) hit.retry = retry;
        return hit;
      },
    }),
    defineAnchor({
      id: "claude.usage-limit",
      priority: 150,
      on: ["text", "error"],
      match(input) {
        const reading = readInput(input);
        if (!USAGE_LIMIT.test(reading.cause)) return null;
        const cause = tidyCause(reading.cause, "none");
        const retry = epochRetry(cause);
        return { cause, category: "quota", ...(retry ? { retry } : {}) };
      },
    }),
    defineAnchor({
      id: "claude.login",
      priority: 140,
      on: ["text", "error"],
      match(input) {
        const { cause } = readInput(input);
        if (!/please run \/login|invalid api key|oauth access token has expired/i.test(cause)) {
          return null;
        }
        return { cause: tidyCause(cause, "none"), category: "auth" };
      },
    }),
    defineAnchor({
      id: "claude.prompt-too-long",
      priority: 140,
      on: ["text", "error"],
      match(input) {
        const { cause } = readInput(input);
        if (!/prompt is too long/i.test(cause)) return null;
        return { cause: tidyCause(cause, "none"), category: "context" };
      },
    }),
  ],
});
