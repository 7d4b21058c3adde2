/**
 * gemini-cli pack (`gemini --acp`). gemini-cli answers a failed prompt with the backend's HTTP
 * status as the JSON-RPC code: `new RequestError(429, "Rate limit exceeded. Try again
 * later.")`, else `new RequestError(getErrorStatus(error) || 500, getAcpErrorMessage(error))`
 * (google-gemini/gemini-cli packages/cli/src/acp/acpSession.ts; before March 2026
 * packages/cli/src/zed-integration/zedIntegration.ts rethrew the raw error, which the ACP SDK
 * sends as `{"code":-32603,"message":"Internal error","data":<Google's error JSON>}`). The
 * backend's own wordings (packages/core/src/utils/googleQuotaErrors.ts and its tests):
 * - `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"...","details":[
 *   {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`;
 * - ErrorInfo reasons QUOTA_EXHAUSTED (terminal quota), RATE_LIMIT_EXCEEDED,
 *   MODEL_CAPACITY_EXHAUSTED ("No capacity available for model gemini-3.1-pro-preview on the
 *   server"), and "Quota exceeded for metric: ... limit: 0" (no quota at all);
 * - "You have exhausted your capacity on this model. Your quota will reset after 19h14m47s."
 *   (packages/core/src/utils/googleQuotaErrors.test.ts);
 * - "Usage limit reached for gemini-2.5-pro." (useQuotaAndFallback.ts);
 * - "Please retry in 37.2s" (googleQuotaErrors.ts `classifyGoogleError`).
 */
import {
  type AnchorHit,
  type Category,
  defineAnchor,
  definePlugin,
  grpcCategory,
  NO_QUOTA,
  parseDuration,
  parseRecovery,
  readInput,
  statusCategory,
  tidyCause,
  wordCategory,
} from "../lib/plugin_api.ts";

const HOUR = 3_600_000;

/** Categories of google.rpc.ErrorInfo reasons gemini-cli acts on. */
export const REASON_CATEGORY: Readonly<Record<string, Category>> = {
  QUOTA_EXHAUSTED: "quota",
  INSUFFICIENT_G1_CREDITS_BALANCE: "quota",
  RATE_LIMIT_EXCEEDED: "rate_limit",
  MODEL_CAPACITY_EXHAUSTED: "capacity",
  MODEL_CAPACITY_EXCEEDED: "capacity",
  VALIDATION_REQUIRED: "auth",
  ACCESS_DENIED: "auth",
};

/** "Your quota will reset after 19h14m47s." */
const RESET_AFTER = /quota will reset after\s+((?:\d+(?:\.\d+)?\s*[a-z]+\s*)+)/i;

/** The delay of "Your quota will reset after 19h14m47s", in milliseconds. */
function resetAfterMs(text: string): number | undefined {
  const m = text.match(RESET_AFTER);
  return m ? parseDuration(m[1]) ?? undefined : undefined;
}

/** The gemini pack: its anchors (`gemini.*`), loaded as the built-in `builtin:gemini`. */
export default definePlugin({
  anchors: [
    defineAnchor({
      id: "gemini.google-error",
      priority: 160,
      on: ["error", "text"],
      match(input) {
        const reading = readInput(input);
        const provider = reading.provider;
        const rpcStatus = input.kind === "error" && typeof input.error.code === "number" &&
            input.error.code >= 400 && input.error.code <= 599
          ? input.error.code
          : undefined;
        // Google's error model, or gemini-cli's HTTP status as the JSON-RPC code.
        if (provider?.grpc === undefined && provider?.reason === undefined && !rpcStatus) {
          return null;
        }
        const cause = tidyCause(reading.cause, "none");
        if (cause === "") return null;
        const status = provider?.status ?? rpcStatus;
        // gemini-cli files a failed fetch under code 500: the words give the cause.
        const wrapperOnly = provider?.grpc === undefined && provider?.reason === undefined;
        const category = (NO_QUOTA.test(cause) ? "quota" : undefined) ??
          (wrapperOnly ? wordCategory(cause) : undefined) ??
          REASON_CATEGORY[provider?.reason ?? ""] ??
          (/exhausted your capacity/i.test(cause) ? "quota" : undefined) ??
          grpcCategory(provider?.grpc) ?? statusCategory(status);
        const afterMs = provider?.retryDelayMs ?? resetAfterMs(cause);
        // Google words a per-minute limit and a daily quota alike ("You exceeded your current
        // quota"); one that lifts within the hour ("Please retry in 30.5s") is a rate limit.
        // (An absolute reset, counted from the epoch here, is never within the hour.)
        const lifts = afterMs ?? parseRecovery(cause, 0)?.afterMs ?? undefined;
        const hit: AnchorHit = { cause };
        if (
          category === "quota" && lifts !== undefined && lifts < HOUR && !NO_QUOTA.test(cause)
        ) {
          hit.category = "rate_limit";
        } else if (category !== undefined) hit.category = category;
        if (status !== undefined) hit.code = status;
        if (afterMs !== undefined) hit.retry = { afterMs, reason: "retryDelay" };
        return hit;
      },
    }),
    defineAnchor({
      id: "gemini.quota-reset",
      priority: 150,
      on: ["text", "error"],
      match(input) {
        const { cause } = readInput(input);
        if (!RESET_AFTER.test(cause) && !/usage limit reached for /i.test(cause)) return null;
        const afterMs = resetAfterMs(cause);
        return {
          cause: tidyCause(cause, "none"),
          category: "quota",
          ...(afterMs !== undefined ? { retry: { afterMs, reason: "resets" } } : {}),
        };
      },
    }),
  ],
});
