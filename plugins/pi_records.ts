/**
 * Reader of pi's session files (pi-acp over @earendil-works/pi-coding-agent 1.6.0), one JSON
 * entry a line in `${PI_CODING_AGENT_DIR:-~/.pi/agent}/sessions/--<cwd>--/<time>_<id>.jsonl`,
 * the id being the session id pi-acp gives on the wire (pi-acp's session-map.json names the
 * file). Entries are `{type, id, parentId, timestamp, ...}`: `session`, `model_change`,
 * `thinking_level_change`, `context_edit` and `message`, whose `message` is
 * `{role:"system"|"user"|"assistant"|"toolResult", content, ...}`. An assistant message
 * carries `stopReason` — "stop", "length", "toolUse", "error", "aborted" (pi-ai's
 * StopReason) — and, on "error", `errorMessage`: the provider's or the runtime's words (the
 * OpenAI SDK's `"<status>: <body>"`, `"Connection error."`, `"Request timed out."`), or pi-ai's
 * own words (pi-ai dist/api/openai-completions.js): `mapStopReason` turns a `content_filter`
 * finish into `"Provider finish_reason: content_filter"` — the model refused — and a stream
 * that ends with no finish_reason is `"Stream ended without finish_reason"`.
 *
 * pi writes each assistant message when its response ends, before pi-acp answers the prompt
 * (corpus: tests/agents/corpus/pi-acp), so a prompt with no final message after it ended
 * before it (`answerFirst`). Every failure reaches the client as `end_turn` with retry
 * notices as reply text ("Retrying (attempt 1/1, waiting 1s)...", "Retry finished,
 * resuming."): the entry with `stopReason: "error"` is the only place the failure is told.
 */
import {
  contentText,
  definePlugin,
  defineRecordReader,
  obj,
  type RecordEvent,
  str,
} from "../lib/plugin_api.ts";

/** The HTTP status the OpenAI SDK puts first in an API error's message (`"429 Rate ..."`). */
function leadingStatus(text: string): number | undefined {
  const m = text.match(/^([1-5]\d\d)\b/);
  return m ? Number(m[1]) : undefined;
}

/** pi-ai's error for a `content_filter` finish: a refusal, not an error. */
const REFUSAL = "Provider finish_reason: content_filter";
/** pi-ai's error for a stream that ended before its finish_reason: the answer was cut. */
const NO_FINISH = "Stream ended without finish_reason";

/** Reads one session entry. */
export function readPiRecord(value: unknown): RecordEvent | null {
  const entry = obj(value);
  if (!entry || entry.type !== "message") return null;
  const message = obj(entry.message);
  if (!message) return null;
  if (message.role === "user") return { kind: "prompt", answerFirst: true };
  if (message.role !== "assistant") return null;
  const text = contentText(message.content);
  switch (message.stopReason) {
    case "stop":
      return text ? { kind: "reply", final: true, text } : { kind: "reply", final: true };
    case "toolUse":
      return { kind: "reply", final: false };
    case "length":
      return { kind: "stop", stopReason: "max_tokens" };
    case "aborted":
      return { kind: "aborted", cause: str(message.errorMessage) || "pi aborted the turn" };
    case "error": {
      const cause = (str(message.errorMessage) ?? "").trim();
      if (!cause) return { kind: "aborted", cause: "pi ended the response on an error" };
      if (cause.startsWith(REFUSAL)) {
        return { kind: "stop", stopReason: "refusal", ...(text ? { cause: text } : {}) };
      }
      if (cause.startsWith(NO_FINISH)) return { kind: "error", cause, category: "network" };
      const code = leadingStatus(cause);
      return { kind: "error", cause, ...(code !== undefined ? { code } : {}) };
    }
  }
  return null;
}

/** The pi record pack: its reader, loaded as the built-in `builtin:pi_records`. */
export default definePlugin({
  readers: [
    defineRecordReader({ id: "pi.session", agents: ["pi"], read: readPiRecord, endsTurn: true }),
  ],
});
