/**
 * The failure scenarios the real-agent corpus records: for each one, what the local mock model
 * API answers on each provider's wire. Error bodies follow the providers' public error docs:
 *
 * - Anthropic: https://docs.claude.com/en/api/errors (shape `{type:"error", error:{type,
 *   message}, request_id}`; 429 rate_limit_error with retry-after; 529 overloaded_error; the
 *   monthly spend limit is a 429 rate_limit_error whose `details.error_code` is
 *   `enforced_spend_limit_reached`; a low credit balance is a 400 invalid_request_error), and
 *   the streaming docs (an `event: error` in the middle of an SSE stream).
 * - Gemini: https://ai.google.dev/gemini-api/docs/troubleshooting (google.rpc Status:
 *   `{error:{code,message,status,details}}`, with ErrorInfo.reason API_KEY_INVALID,
 *   QuotaFailure quotaId ...PerDay... / ...PerMinute..., RetryInfo.retryDelay;
 *   400 FAILED_PRECONDITION "User location is not supported for the API use.";
 *   402 RESOURCE_EXHAUSTED prepayment credits depleted; 403 PERMISSION_DENIED; 404 NOT_FOUND).
 * - OpenAI: https://platform.openai.com/docs/guides/error-codes (`{error:{message,type,param,
 *   code}}`; 401 invalid_api_key "Incorrect API key provided"; 403 unsupported_country_region_
 *   territory; 429 "Rate limit reached for requests" / insufficient_quota "You exceeded your
 *   current quota, please check your plan and billing details"; 400 context_length_exceeded;
 *   Responses streaming `response.failed` / `response.incomplete`).
 */

/** Which model API wire an agent speaks. */
export type Provider = "anthropic" | "gemini" | "openai";

/** One HTTP error answer: status, extra headers, JSON body. */
export interface HttpError {
  kind: "error";
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

/** What the mock does with a model request. */
export type Behavior =
  | { kind: "ok" }
  | HttpError
  /** Accept the request and never answer it. */
  | { kind: "hang" }
  /**
   * Stream part of the answer, then destroy the socket. `whole: "answered"`: a whole-body
   * (non-streaming) request gets the whole clean answer instead of a cut body.
   */
  | { kind: "cut"; whole?: "answered" }
  /** Stream part of the answer, then end the HTTP response without the terminating event. */
  | { kind: "noend" }
  /** Stream part of the answer and stop at the output-token limit. */
  | { kind: "max_tokens" }
  /** The model refuses (a stop reason, not an HTTP error). */
  | { kind: "refusal" }
  /** Stream part of the answer, then an error event in the stream. */
  | { kind: "midstream"; error: "rate_limit" | "overloaded" };

/** A scenario: a name, what the turn should show, and the behavior per provider (absent: n/a). */
export interface Scenario {
  name: string;
  /** One line: what the scenario simulates. */
  about: string;
  /** No mock listens: the agent's base URL points at a closed port. */
  refused?: boolean;
  behavior: Partial<Record<Provider, Behavior>>;
  /**
   * A second prompt in the same session, answered this way (the first prompt's turn keeps
   * `behavior`): a clean turn after a failed one must not inherit its failure.
   */
  then?: Partial<Record<Provider, Behavior>>;
  /**
   * The agent keeps its own default retry count (the recorder leaves out the agent's
   * `retryBounds`), so the recording shows how long it retries on its own.
   */
  agentRetries?: "default";
  /** The bound on the turn, when it is not the recorder's default (CORPUS_TURN_MS). */
  turnMs?: number;
}

const reqId = "req_011CorpusMock0000000001";

function anthropic(status: number, type: string, message: string, extra: object = {}): HttpError {
  return {
    kind: "error",
    status,
    body: { type: "error", error: { type, message, ...extra }, request_id: reqId },
  };
}

function google(status: number, code: string, message: string, details: unknown[] = []): HttpError {
  return {
    kind: "error",
    status,
    body: { error: { code: status, message, status: code, details } },
  };
}

function openai(
  status: number,
  type: string,
  code: string | null,
  message: string,
  headers?: Record<string, string>,
): HttpError {
  return { kind: "error", status, headers, body: { error: { message, type, param: null, code } } };
}

const quotaFailure = (quotaId: string, value: string) => ({
  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
  violations: [{
    quotaMetric: "generativelanguage.googleapis.com/generate_content_paid_tier_requests",
    quotaId,
    quotaDimensions: { location: "global", model: "gemini-2.5-pro" },
    quotaValue: value,
  }],
});
const retryInfo = (delay: string) => ({
  "@type": "type.googleapis.com/google.rpc.RetryInfo",
  retryDelay: delay,
});
const errorInfo = (reason: string) => ({
  "@type": "type.googleapis.com/google.rpc.ErrorInfo",
  reason,
  domain: "googleapis.com",
  metadata: { service: "generativelanguage.googleapis.com" },
});
const GEMINI_QUOTA_MSG =
  "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.";
const OPENAI_RATE_MSG =
  "Rate limit reached for gpt-5 in organization org-corpus on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 7s. Visit https://platform.openai.com/account/rate-limits to learn more.";
const ANTHROPIC_RATE_MSG =
  "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.";

/** The same behavior on every provider's wire. */
function everywhere(b: Behavior): Record<Provider, Behavior> {
  return { anthropic: b, gemini: b, openai: b };
}

/** Every scenario of the corpus, in recording order. */
export const SCENARIOS: Scenario[] = [
  {
    name: "ok",
    about: "a clean answer",
    behavior: everywhere({ kind: "ok" }),
  },
  {
    name: "conn_refused",
    about: "nothing listens at the API address (connection refused)",
    refused: true,
    behavior: everywhere({ kind: "ok" }),
  },
  {
    name: "no_answer",
    about: "the server accepts the request and never answers",
    behavior: everywhere({ kind: "hang" }),
  },
  {
    name: "http_500",
    about: "500 internal server error",
    behavior: {
      anthropic: anthropic(500, "api_error", "Internal server error"),
      gemini: google(
        500,
        "INTERNAL",
        "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
      ),
      openai: openai(
        500,
        "server_error",
        null,
        "The server had an error while processing your request. Sorry about that!",
      ),
    },
  },
  {
    name: "overloaded",
    about: "503/529 the model is overloaded",
    behavior: {
      anthropic: anthropic(529, "overloaded_error", "Overloaded"),
      gemini: google(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
      openai: openai(
        503,
        "service_unavailable_error",
        "server_is_overloaded",
        "The server is overloaded or not ready yet.",
      ),
    },
  },
  {
    name: "rate_limit_retry_after",
    about: "429 per-minute rate limit that states when to retry",
    behavior: {
      anthropic: {
        ...anthropic(429, "rate_limit_error", ANTHROPIC_RATE_MSG),
        headers: { "retry-after": "30" },
      },
      gemini: google(
        429,
        "RESOURCE_EXHAUSTED",
        `${GEMINI_QUOTA_MSG}\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_paid_tier_requests, limit: 150, model: gemini-2.5-pro\nPlease retry in 30.5s.`,
        [
          quotaFailure("GenerateRequestsPerMinutePerProjectPerModel", "150"),
          retryInfo("30s"),
        ],
      ),
      openai: openai(429, "requests", "rate_limit_exceeded", OPENAI_RATE_MSG, {
        "retry-after": "7",
      }),
    },
  },
  {
    name: "rate_limit",
    about: "429 per-minute rate limit with no stated delay",
    behavior: {
      anthropic: anthropic(429, "rate_limit_error", ANTHROPIC_RATE_MSG),
      gemini: google(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", [
        quotaFailure("GenerateRequestsPerMinutePerProjectPerModel", "150"),
      ]),
      openai: openai(
        429,
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for gpt-5 in organization org-corpus on requests per min (RPM): Limit 500, Used 500, Requested 1. Visit https://platform.openai.com/account/rate-limits to learn more.",
      ),
    },
  },
  {
    name: "quota_daily",
    about: "a daily or monthly quota is exhausted",
    behavior: {
      // The monthly spend limit of the usage tier (docs: "429 rate_limit_error with
      // error.details.error_code enforced_spend_limit_reached ... until the first day of the
      // next month at 00:00 UTC").
      anthropic: anthropic(
        429,
        "rate_limit_error",
        "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC.",
        { details: { error_code: "enforced_spend_limit_reached" } },
      ),
      gemini: google(
        429,
        "RESOURCE_EXHAUSTED",
        `${GEMINI_QUOTA_MSG}\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_paid_tier_requests, limit: 1000, model: gemini-2.5-pro\nPlease retry in 9h12m5s.`,
        [
          quotaFailure("GenerateRequestsPerDayPerProjectPerModel", "1000"),
          retryInfo("33125s"),
        ],
      ),
      openai: openai(
        429,
        "insufficient_quota",
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
      ),
    },
  },
  {
    name: "quota_daily_retried",
    about: "the monthly spend limit is reached, and the agent retries it as often as it does " +
      "by default",
    agentRetries: "default",
    turnMs: 300_000,
    behavior: {
      // The same answer as quota_daily's.
      anthropic: anthropic(
        429,
        "rate_limit_error",
        "You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC.",
        { details: { error_code: "enforced_spend_limit_reached" } },
      ),
    },
  },
  {
    name: "billing",
    about: "a spend cap, an empty credit balance or billing not set up",
    behavior: {
      anthropic: anthropic(
        400,
        "invalid_request_error",
        "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
      ),
      gemini: google(
        402,
        "RESOURCE_EXHAUSTED",
        "Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing.",
      ),
      openai: openai(
        429,
        "insufficient_quota",
        "billing_hard_limit_reached",
        "Billing hard limit has been reached. Please increase your hard limit in your billing settings.",
      ),
    },
  },
  {
    name: "auth_401",
    about: "401 the API key is wrong",
    behavior: {
      anthropic: anthropic(401, "authentication_error", "invalid x-api-key"),
      gemini: google(
        401,
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
        [errorInfo("ACCESS_TOKEN_TYPE_UNSUPPORTED")],
      ),
      openai: openai(
        401,
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided: sk-corpu************0000. You can find your API key at https://platform.openai.com/account/api-keys.",
      ),
    },
  },
  {
    name: "invalid_key_400",
    about: "400 the API key is not valid (Gemini's wording for a bad key)",
    behavior: {
      gemini: google(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [
        errorInfo("API_KEY_INVALID"),
        {
          "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
          locale: "en-US",
          message: "API key not valid. Please pass a valid API key.",
        },
      ]),
    },
  },
  {
    name: "permission_403",
    about: "403 the key lacks permission",
    behavior: {
      anthropic: anthropic(
        403,
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
      ),
      gemini: google(
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        [errorInfo("CONSUMER_INVALID")],
      ),
      // OpenAI documents no 403 for permissions: a restricted key gets a 401 naming the
      // missing scope.
      openai: openai(
        401,
        "invalid_request_error",
        null,
        "You have insufficient permissions for this operation. Missing scopes: api.model.request. Check that you have the correct role in your organization (Reader, Writer, Owner) and project (Member, Owner), and if you're using a restricted API key, that it has the necessary scopes.",
      ),
    },
  },
  {
    name: "region",
    about: "the API is not available in the caller's region",
    behavior: {
      anthropic: {
        kind: "error",
        status: 403,
        body: { error: { type: "forbidden", message: "Request not allowed" } },
      },
      gemini: google(400, "FAILED_PRECONDITION", "User location is not supported for the API use."),
      openai: openai(
        403,
        "invalid_request_error",
        "unsupported_country_region_territory",
        "Country, region, or territory not supported",
      ),
    },
  },
  {
    name: "model_404",
    about: "404 the model does not exist",
    behavior: {
      anthropic: anthropic(404, "not_found_error", "model: claude-corpus-missing"),
      gemini: google(
        404,
        "NOT_FOUND",
        "models/gemini-corpus-missing is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
      ),
      openai: openai(
        404,
        "invalid_request_error",
        "model_not_found",
        "The model `gpt-corpus-missing` does not exist or you do not have access to it.",
      ),
    },
  },
  {
    name: "context_overflow",
    about: "the prompt exceeds the model's context window",
    behavior: {
      anthropic: anthropic(
        400,
        "invalid_request_error",
        "prompt is too long: 208923 tokens > 200000 maximum",
      ),
      gemini: google(
        400,
        "INVALID_ARGUMENT",
        "The input token count (1250000) exceeds the maximum number of tokens allowed (1048576).",
      ),
      openai: openai(
        400,
        "invalid_request_error",
        "context_length_exceeded",
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
      ),
    },
  },
  {
    name: "stream_cut",
    about: "the answer's stream is cut by a closed socket",
    behavior: everywhere({ kind: "cut" }),
  },
  {
    // Claude Code falls back to a non-streaming request when a stream fails mid-way (seen in
    // stream_cut: a `"stream":false` retry of the turn's request after the cut); here that
    // retry is answered, so the turn's final answer comes from the fallback.
    name: "stream_cut_fallback",
    about: "the answer's stream is cut by a closed socket; the agent's non-streaming retry " +
      "is answered in full",
    behavior: { anthropic: { kind: "cut", whole: "answered" } },
  },
  {
    name: "stream_no_end",
    about: "the stream ends without its terminating event",
    behavior: everywhere({ kind: "noend" }),
  },
  {
    name: "max_tokens",
    about: "the answer stops at the output-token limit",
    behavior: everywhere({ kind: "max_tokens" }),
  },
  {
    name: "refusal",
    about: "the model refuses to answer",
    behavior: everywhere({ kind: "refusal" }),
  },
  {
    name: "midstream_rate_limit",
    about: "an error event in the middle of the stream: rate limit",
    behavior: everywhere({ kind: "midstream", error: "rate_limit" }),
  },
  {
    name: "midstream_overloaded",
    about: "an error event in the middle of the stream: overloaded",
    behavior: everywhere({ kind: "midstream", error: "overloaded" }),
  },
  {
    name: "clean_after_error",
    about:
      "two prompts in one session: the first stream fails with an overload error event, the second is answered cleanly",
    behavior: everywhere({ kind: "midstream", error: "overloaded" }),
    then: everywhere({ kind: "ok" }),
  },
];

/** The mid-stream error bodies per provider (the same wordings as the HTTP errors above). */
export const MIDSTREAM = {
  anthropic: {
    rate_limit: { type: "error", error: { type: "rate_limit_error", message: ANTHROPIC_RATE_MSG } },
    overloaded: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
  },
  gemini: {
    rate_limit:
      (google(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", [
        quotaFailure("GenerateRequestsPerMinutePerProjectPerModel", "150"),
        retryInfo("12s"),
      ])).body,
    overloaded: google(503, "UNAVAILABLE", "The model is overloaded. Please try again later.").body,
  },
  openai: {
    rate_limit: { code: "rate_limit_exceeded", message: OPENAI_RATE_MSG },
    overloaded: {
      code: "server_is_overloaded",
      message: "The server is overloaded or not ready yet.",
    },
  },
} as const;

/** The text of a clean answer, and the fragment streamed before a failure. */
export const ANSWER = "The answer is 4: two plus two makes four.";
export const PARTIAL = "The answer is 4: two plus";
/** The prompt every scenario sends. */
export const PROMPT = "What is 2+2? Answer in one short sentence.";
/** The second prompt of a two-turn scenario (`then`). */
export const PROMPT_AGAIN = "Once more: what is 2+2? Answer in one short sentence.";
