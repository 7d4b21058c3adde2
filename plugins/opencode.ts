/**
 * opencode pack (`opencode acp`, opencode-ai 1.18.33). opencode retries a retryable API error
 * on its own, silently, with no bound a setting can set: the wire shows nothing while it does.
 * What it met is in its log, `${XDG_DATA_HOME:-~/.local/share}/opencode/log/opencode.log`, one
 * logfmt line per event (corpus: tests/agents/corpus/opencode):
 *
 *   timestamp=... level=ERROR run=... message="stream error" providerID=mock modelID=gpt-5
 *   session.id=ses_... small=false agent=build mode=primary error.error="AI_APICallError: Rate
 *   limit reached for gpt-5 ..."
 *
 * one per attempt (a structured provider error as `error.error.message="..."
 * error.error.code=server_is_overloaded` instead); `small=true` lines are its title generator's (a side request of the
 * same turn, whose failure is not the turn's), and the AI SDK's error class
 * (`AI_APICallError`, `AI_RetryError: Failed after 3 attempts. Last error: ...`) comes first
 * in the value. When opencode gives up it logs `message=process ... error="..."` and fails
 * the prompt with JSON-RPC -32603 `"Internal error: <the provider's message>"`, `data:
 * {service, errorName}` — the provider's words with no status code; `errorName` is opencode's
 * own error class (its NamedError names, in the binary: `APIError`, `ContextOverflowError`,
 * `ProviderAuthError`, `MessageOutputLengthError`, `MessageAbortedError`).
 */
import {
  type AnchorHit,
  type Category,
  defineAnchor,
  definePlugin,
  obj,
  str,
  tidyCause,
  wordCategory,
} from "../lib/plugin_api.ts";

/** A logfmt value of `key` in a line: quoted (backslash escapes) or bare. */
export function logfmtValue(line: string, key: string): string | null {
  const at = line.search(new RegExp(`(?:^|\\s)${key.replace(/\./g, "\\.")}=`));
  if (at === -1) return null;
  const rest = line.slice(line.indexOf("=", at) + 1);
  if (!rest.startsWith('"')) return rest.match(/^\S*/)![0];
  let out = "";
  for (let i = 1; i < rest.length; i++) {
    const c = rest[i];
    if (c === "\\" && i + 1 < rest.length) out += rest[++i];
    else if (c === '"') return out;
    else out += c;
  }
  return out;
}

/** The AI SDK's error class and retry wrapper before the provider's words, taken off. */
export function sdkCause(value: string): string {
  return value
    .replace(/^AI_\w+:\s*/, "")
    .replace(/^Failed after \d+ attempts\. Last error:\s*/, "");
}

/** Categories of opencode's own error classes (`data.errorName`); `APIError` is the provider's. */
export const ERROR_NAME_CATEGORY: Readonly<Record<string, Category>> = {
  ContextOverflowError: "context",
  ProviderAuthError: "auth",
};

/** The opencode pack: its anchors (`opencode.*`), loaded as the built-in `builtin:opencode`. */
export default definePlugin({
  anchors: [
    defineAnchor({
      id: "opencode.stream-error",
      priority: 150,
      agents: ["opencode"],
      on: ["log"],
      match(input) {
        if (input.kind !== "log") return null;
        const line = input.line;
        if (logfmtValue(line, "level") !== "ERROR") return null;
        const message = logfmtValue(line, "message");
        // The title generator's failures are a side request's, not the turn's.
        if (message === "stream error" && logfmtValue(line, "small") === "true") return null;
        const value = message === "stream error"
          ? logfmtValue(line, "error.error") ?? logfmtValue(line, "error.error.message")
          : message === "process"
          ? logfmtValue(line, "error")
          : null;
        if (!value || value === "Aborted") return null;
        const cause = tidyCause(sdkCause(value), "none");
        if (cause === "") return null;
        // No status reaches the log: the provider's words give the category (the generic
        // pack's rules).
        const hit: AnchorHit = { cause };
        const category = wordCategory(cause);
        if (category !== undefined) hit.category = category;
        return hit;
      },
    }),
    defineAnchor({
      id: "opencode.error-name",
      priority: 150,
      agents: ["opencode"],
      on: ["error"],
      match(input) {
        if (input.kind !== "error") return null;
        const name = str(obj(input.error.data)?.errorName);
        const message = str(input.error.message);
        if (!name || !message) return null;
        const cause = tidyCause(message.replace(/^Internal error:\s*/, ""), "none");
        if (cause === "") return null;
        const hit: AnchorHit = { cause };
        const category = ERROR_NAME_CATEGORY[name] ?? wordCategory(cause);
        if (category !== undefined) hit.category = category;
        return hit;
      },
    }),
  ],
});
