/**
 * Reader of qwen-code's chat records (`qwen --acp`, @qwen-code/qwen-code 0.24.4), one JSON
 * record a line in `${QWEN_HOME:-~/.qwen}/projects/<sanitized cwd>/chats/<session id>.jsonl`
 * (chunks/chunk-YWZOEHBT.js getGlobalQwenDir, chunk-DPEB6S2R.js ChatRecordingService
 * `chats`), the session id being the one qwen gives on the wire. A record is `{uuid,
 * parentUuid, sessionId, timestamp, type:"user"|"assistant"|"system", ...}`: `user` and
 * `assistant` hold `message.parts` (Gemini-style `{text}` / `{functionCall}` parts); `system`
 * records carry a `subtype`, and `ui_telemetry` ones the UI's telemetry event
 * (`systemPayload.uiEvent`, chunk-2VS5EEXU.js `logApiError` → recordUiTelemetryEventToChat):
 * `"event.name": "qwen-code.api_error"` with `error_message`, `error_type` (the SDK's error
 * class: `APIConnectionError`, ...) and `status_code` when the API answered — one record per
 * attempt, retries included; a subagent's (`subagent_id`: its memory extractor runs after
 * the answer) is another request's. No finish reason is recorded: an answer cut at the output
 * token limit looks whole.
 *
 * The assistant record of a prompt is written before qwen answers the prompt (corpus:
 * tests/agents/corpus/qwen-code), so a prompt with no final assistant record after it ended
 * before its answer (`answerFirst`). The wire often says less than the records: a failed
 * turn can end `end_turn` with nothing streamed.
 */
import { definePlugin, defineRecordReader, obj, type RecordEvent, str } from "../lib/plugin_api.ts";

/** The text of Gemini-style parts, and whether one of them is a tool call. */
function partsOf(message: unknown): { text: string; calls: boolean } {
  const parts = obj(message)?.parts;
  if (!Array.isArray(parts)) return { text: "", calls: false };
  let text = "";
  let calls = false;
  for (const p of parts) {
    const part = obj(p);
    if (!part) continue;
    if (typeof part.text === "string" && part.thought !== true) text += part.text;
    if (part.functionCall !== undefined) calls = true;
  }
  return { text, calls };
}

/** Reads one chat record. */
export function readQwenRecord(value: unknown): RecordEvent | null {
  const record = obj(value);
  if (!record) return null;
  switch (record.type) {
    case "user":
      return { kind: "prompt", answerFirst: true };
    case "assistant": {
      const { text, calls } = partsOf(record.message);
      if (calls) return { kind: "reply", final: false };
      return text ? { kind: "reply", final: true, text } : null;
    }
    case "system": {
      if (record.subtype !== "ui_telemetry") return null;
      const event = obj(obj(record.systemPayload)?.uiEvent);
      if (!event || event["event.name"] !== "qwen-code.api_error") return null;
      // A subagent's request (its memory extractor, after the answer) is not the turn's.
      if (event.subagent_id !== undefined) return null;
      const cause = (str(event.error_message) ?? "").trim();
      if (!cause) return null;
      const code = event.status_code;
      return {
        kind: "error",
        cause,
        ...(typeof code === "number" || typeof code === "string" ? { code } : {}),
      };
    }
  }
  return null;
}

/** The qwen record pack: its reader, loaded as the built-in `builtin:qwen_records`. */
export default definePlugin({
  readers: [
    defineRecordReader({ id: "qwen.chat", agents: ["qwen"], read: readQwenRecord, endsTurn: true }),
  ],
});
