/**
 * qwen-code pack (`qwen --acp`, @qwen-code/qwen-code 0.24.4). A prompt qwen-code gives up on
 * fails with the ACP SDK's generic internal error, the cause only in `data.details`:
 * `{"code":-32603,"message":"Internal error","data":{"details":"401 Incorrect API key
 * provided: ..."}}` (corpus: tests/agents/corpus/qwen-code) — the OpenAI SDK's
 * `"<status> <message>"`, undici's `"terminated"` for a socket closed mid-body, or qwen-code's
 * own sentence for a stream that ended without a finish reason, "Model stream ended without a
 * finish reason." (chunks/chunk-DPEB6S2R.js, `InvalidStreamError` NO_FINISH_REASON). Errors
 * it retries (5xx, 429 — an exhausted quota too) it retries silently; they are in its chat
 * records (plugins/qwen_records.ts).
 */
import {
  type AnchorHit,
  defineAnchor,
  definePlugin,
  obj,
  statusCategory,
  str,
  tidyCause,
  wordCategory,
} from "../lib/plugin_api.ts";

/** qwen-code's sentence for a stream cut before its finish reason: the answer is cut. */
const NO_FINISH = "Model stream ended without a finish reason.";

/** The qwen pack: its anchors (`qwen.*`), loaded as the built-in `builtin:qwen`. */
export default definePlugin({
  anchors: [
    defineAnchor({
      id: "qwen.details",
      priority: 150,
      agents: ["qwen"],
      on: ["error"],
      match(input) {
        if (input.kind !== "error" || input.error.message !== "Internal error") return null;
        const details = str(obj(input.error.data)?.details);
        if (!details) return null;
        const cause = tidyCause(details, "none");
        if (cause === "") return null;
        const hit: AnchorHit = { cause };
        const status = cause.match(/^([1-5]\d\d) /);
        if (status) hit.code = Number(status[1]);
        // The provider's words first, then its status (the generic pack's rules).
        const category = cause.startsWith(NO_FINISH)
          ? "network"
          : wordCategory(cause) ?? statusCategory(status ? Number(status[1]) : undefined);
        if (category !== undefined) hit.category = category;
        return hit;
      },
    }),
  ],
});
