/**
 * Reader of gemini-cli's chat records (`gemini --acp`), one JSON record a line in
 * `${GEMINI_CLI_HOME:-~}/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDThh-mm>-<first 8
 * characters of the session id>.jsonl` (@google/gemini-cli 0.61.0, ChatRecordingService in
 * bundle/chunk-JDPZ4CE3.js); the session id is the one gemini gives on the wire
 * (`newSession`: `randomUUID()`, the config's session id). The first record holds
 * `sessionId` (so a file of another session with the same 8 characters is not read);
 * then messages `{id, timestamp, type:"user"|"gemini"|"info"|"error"|"warning", content}`,
 * a message appended again under its id when it is updated, and `{$set:{...}}` metadata.
 * A `gemini` message is recorded only once its model response completed (`recordMessage`
 * at the end of the stream, before the prompt is answered, with `appendFileSync`): a turn
 * whose stream failed, even after gemini-cli's own retries, leaves its prompt without a
 * `gemini` message after it, so the prompt says `answerFirst`.
 */
import {
  contentText,
  definePlugin,
  defineRecordReader,
  obj,
  type RecordEvent,
  statusIn,
} from "../lib/plugin_api.ts";

/** Reads one chat record. */
export function readGeminiRecord(value: unknown): RecordEvent | null {
  const record = obj(value);
  if (!record || typeof record.id !== "string") return null;
  const text = contentText(record.content);
  switch (record.type) {
    case "user":
      return { kind: "prompt", answerFirst: true };
    case "gemini": {
      const calls = Array.isArray(record.toolCalls) && record.toolCalls.length > 0;
      if (!text && !calls) return null;
      return text ? { kind: "reply", final: true, text } : { kind: "reply", final: true };
    }
    case "error": {
      if (!text.trim()) return null;
      const code = statusIn(text);
      return { kind: "error", cause: text.trim(), ...(code !== undefined ? { code } : {}) };
    }
  }
  return null;
}

/** The gemini record pack: its reader, loaded as the built-in `builtin:gemini_records`. */
export default definePlugin({
  readers: [
    defineRecordReader({
      id: "gemini.chat",
      agents: ["gemini"],
      read: readGeminiRecord,
      endsTurn: true,
    }),
  ],
});
