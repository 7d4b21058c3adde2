/**
 * Reader of Claude Code's session transcript (claude-agent-acp, claude-code-acp), one JSON
 * record a line in `${CLAUDE_CONFIG_DIR:-~/.claude}/projects/<cwd, "/" and "." as "-">/
 * <session>.jsonl`; the file name is the session id claude-agent-acp gives on the wire
 * (src/acp-agent.ts `createSession`: `options.sessionId = sessionId`). Record shapes as
 * @anthropic-ai/claude-agent-sdk 0.2.44 cli.js writes them:
 * - `{type:"user", message:{role:"user", content}}`: the prompt (or, with `tool_result`
 *   blocks, a tool's answer; `isMeta` records are Claude Code's own);
 * - `{type:"assistant", message:{content, stop_reason}}`: a message of the answer;
 *   `stop_reason` `max_tokens` / `refusal` when the model stopped so;
 * - `{type:"assistant", isApiErrorMessage:true, error:"<kind>", message:{content:[{text:
 *   "API Error: 529 {...}"}]}}`: the error the turn ended on (cli.js `CY(...)`, kinds as
 *   SDKAssistantMessageError; "max_output_tokens" is the output token limit);
 * - `{type:"system", subtype:"api_error", error, retryInMs, retryAttempt, maxRetries}`: an
 *   API error Claude Code retries (cli.js `nE7`): `retryInMs` is the wait it announces before
 *   its next attempt (its own backoff, not the provider's reset: in the corpus's
 *   quota_daily_retried the next request follows each record by `retryInMs`, 0.5 s growing
 *   to 40 s, while the quota's words name a reset a day away) and `retryAttempt` its number
 *   for the attempt, 1 to `maxRetries`.
 */
import {
  type Category,
  contentText,
  definePlugin,
  defineRecordReader,
  obj,
  type RecordEvent,
  statusIn,
  str,
} from "../lib/plugin_api.ts";
import { kindCategory } from "./claude.ts";

/** The words of a retried API error as the record holds it (an APIError serialized). */
function retriedCause(record: Record<string, unknown>): { cause: string; code?: number } {
  const error = obj(record.error);
  const status = typeof error?.status === "number" ? error.status : undefined;
  const body = obj(obj(error?.error)?.error) ?? obj(error?.error);
  // `formatted` (Claude Code 2.1): the status and the provider's message, without its JSON.
  const formatted = str(error?.formatted)?.replace(/^\d{3}\s+/, "");
  const words = str(body?.message) ?? formatted ?? str(error?.message) ?? "API error";
  const attempt = typeof record.retryAttempt === "number" ? record.retryAttempt : null;
  const of = typeof record.maxRetries === "number" ? record.maxRetries : null;
  const tries = attempt !== null ? ` (retry ${attempt}${of !== null ? ` of ${of}` : ""})` : "";
  return {
    cause: `API Error${status !== undefined ? `: ${status}` : ""} ${words}${tries}`,
    ...(status !== undefined ? { code: status } : {}),
  };
}

/** Reads one transcript record. */
export function readClaudeRecord(value: unknown): RecordEvent | null {
  const record = obj(value);
  if (!record) return null;
  const message = obj(record.message);
  switch (record.type) {
    case "user": {
      if (record.isMeta === true || record.isSidechain === true) return null;
      const content = message?.content;
      if (Array.isArray(content) && content.some((b) => obj(b)?.type === "tool_result")) {
        return null;
      }
      return { kind: "prompt" };
    }
    case "system": {
      if (record.subtype !== "api_error") return null;
      const next = record.retryInMs;
      const attempt = record.retryAttempt;
      return {
        kind: "error",
        retrying: true,
        ...retriedCause(record),
        ...(typeof next === "number" && Number.isFinite(next) && next >= 0
          ? { nextAttemptInMs: next }
          : {}),
        ...(typeof attempt === "number" && Number.isInteger(attempt) && attempt >= 1
          ? { attempt }
          : {}),
      };
    }
    case "assistant": {
      if (record.isSidechain === true) return null;
      const text = contentText(message?.content);
      if (record.isApiErrorMessage === true) {
        const kind = str(record.error);
        const cause = text.trim() || "API Error";
        if (kind === "max_output_tokens") return { kind: "stop", stopReason: "max_tokens", cause };
        const category: Category | undefined = kind ? kindCategory(kind, cause) : undefined;
        const code = statusIn(cause);
        return {
          kind: "error",
          cause,
          ...(category ? { category } : {}),
          ...(code !== undefined ? { code } : {}),
        };
      }
      const stop = str(message?.stop_reason);
      if (stop === "max_tokens") return { kind: "stop", stopReason: stop };
      if (stop === "refusal") {
        return { kind: "stop", stopReason: stop, ...(text ? { cause: text.slice(0, 500) } : {}) };
      }
      return text ? { kind: "reply", final: true, text } : null;
    }
  }
  return null;
}

/** The claude record pack: its reader, loaded as the built-in `builtin:claude_records`. */
export default definePlugin({
  readers: [
    defineRecordReader({
      id: "claude.transcript",
      agents: ["claude"],
      read: readClaudeRecord,
      endsTurn: true,
    }),
  ],
});
