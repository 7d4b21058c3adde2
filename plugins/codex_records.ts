/**
 * Reader of codex's rollout files (codex-acp), one `RolloutLine` a line in
 * `${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<id>.jsonl`,
 * the id being the conversation id codex-acp gives on the wire as the session id
 * (openai/codex codex-rs/core/src/rollout/recorder.rs). A line is
 * `{"timestamp":..., "type":"session_meta"|"response_item"|"event_msg"|"turn_context"|
 * "compacted", "payload":{...}}`; `event_msg` payloads are tagged by `type`. Which events
 * are written at all is codex-rs/core/src/rollout/policy.rs `should_persist_event_msg`:
 * `user_message`, `agent_message`, `token_count`, `turn_aborted` (and a few more) are;
 * `error` and `stream_error` are not in the default (compact) mode — read, when present,
 * all the same. codex-acp 0.16 also writes `task_complete` with `last_agent_message`: the
 * turn's final answer, null when the turn ended without one (every recorded failure of the
 * corpus: a cut or unfinished stream, an error event mid-stream, the output token limit, a
 * dropped refusal).
 *
 * A refusal leaves no word in the rollout: codex's message content knows `input_text`,
 * `input_image` and `output_text` only (the serde tags in the codex-acp 0.16.0 binary), so
 * an output message holding a `refusal` part fails to parse and is skipped
 * (codex-rs/codex-api/src/sse/responses.rs: "failed to parse ResponseItem from
 * output_item.done", a debug log line). What stays is the response's `token_count`
 * (`info.last_token_usage.output_tokens`, reasoning in `reasoning_output_tokens`): output
 * counted for a response that left no message, no agent_message and no tool call.
 */
import { definePlugin, defineRecordReader, obj, type RecordEvent, str } from "../lib/plugin_api.ts";

/** Response items that are the model's output besides a message: a tool call it made. */
const CALL_ITEMS = new Set([
  "function_call",
  "custom_tool_call",
  "local_shell_call",
  "web_search_call",
  "tool_search_call",
  "image_generation_call",
]);

/** The output tokens of one response, reasoning excluded; null when the count is absent. */
function outputTokens(payload: Record<string, unknown>): number | null {
  const last = obj(obj(payload.info)?.last_token_usage);
  const output = last?.output_tokens;
  if (typeof output !== "number") return null;
  const reasoning = typeof last?.reasoning_output_tokens === "number"
    ? last.reasoning_output_tokens
    : 0;
  return Math.max(0, output - reasoning);
}

/** Reads one rollout line. */
export function readCodexRecord(value: unknown): RecordEvent | null {
  const line = obj(value);
  if (!line) return null;
  const payload = obj(line.payload);
  if (!payload) return null;
  if (line.type === "response_item") {
    return typeof payload.type === "string" && CALL_ITEMS.has(payload.type)
      ? { kind: "reply", final: false }
      : null;
  }
  if (line.type !== "event_msg") return null;
  switch (payload.type) {
    case "user_message":
      return { kind: "prompt" };
    case "agent_message": {
      const text = str(payload.message);
      return text ? { kind: "reply", final: true, text } : null;
    }
    case "token_count": {
      const output = outputTokens(payload);
      return output === null ? null : { kind: "usage", output };
    }
    case "task_complete": {
      const text = str(payload.last_agent_message);
      return text !== null
        ? { kind: "reply", final: true, text }
        : { kind: "aborted", cause: "codex completed the turn without a final message" };
    }
    case "turn_aborted": {
      const reason = str(payload.reason) ?? "unknown";
      return { kind: "aborted", cause: `codex aborted the turn (${reason})` };
    }
    case "error":
    case "stream_error": {
      const message = str(payload.message);
      if (!message) return null;
      return payload.type === "error"
        ? { kind: "error", cause: message }
        : { kind: "error", cause: message, retrying: true };
    }
  }
  return null;
}

/** The codex record pack: its reader, loaded as the built-in `builtin:codex_records`. */
export default definePlugin({
  readers: [
    defineRecordReader({
      id: "codex.rollout",
      agents: ["codex"],
      read: readCodexRecord,
      endsTurn: true,
    }),
  ],
});
