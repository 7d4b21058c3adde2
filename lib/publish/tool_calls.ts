/**
 * Tool call state joined by `toolCallId`: agents spread one call's title, rawInput, status
 * and result over a `tool_call` and several `tool_call_update`s, so a call is only known
 * once they are merged. Pure; shared by the proxy and the publish engine.
 */
import * as v from "valibot";
import { type ToolCallState, ToolCallStateSchema } from "../plugin/api.ts";
import { isObject } from "../acp/jsonrpc.ts";

/** Fields that ACP types as strings; a value of another type is dropped, as ACP peers do. */
const STRING_FIELDS = new Set(["title", "kind", "status", "name"]);

/** Whether a `session/update`'s `update` object is a `tool_call` or `tool_call_update`. */
export function isToolCallUpdate(
  update: unknown,
): update is Record<string, unknown> & { toolCallId: string } {
  return isObject(update) &&
    (update.sessionUpdate === "tool_call" || update.sessionUpdate === "tool_call_update") &&
    typeof update.toolCallId === "string";
}

/**
 * Merges one `tool_call` or `tool_call_update` into a call's state: every field the update
 * carries replaces the earlier value (content and locations are replaced whole, as ACP
 * says); a field that is absent or `null` leaves the earlier value as it was.
 */
export function mergeToolCall(
  prev: ToolCallState | undefined,
  update: Readonly<Record<string, unknown>> & { toolCallId: string },
): ToolCallState {
  const next: Record<string, unknown> = { ...prev, toolCallId: update.toolCallId };
  for (const [key, value] of Object.entries(update)) {
    if (key === "sessionUpdate" || key === "toolCallId" || value === undefined || value === null) {
      continue;
    }
    if (STRING_FIELDS.has(key) && typeof value !== "string") continue;
    next[key] = value;
  }
  return v.parse(ToolCallStateSchema(), next);
}

/**
 * Applies one `session/update` `update` object to a turn's calls by id; anything that is
 * not a tool call update is ignored. Returns whether it was one.
 */
export function applyToolCallUpdate(calls: Map<string, ToolCallState>, update: unknown): boolean {
  if (!isToolCallUpdate(update)) return false;
  calls.set(update.toolCallId, mergeToolCall(calls.get(update.toolCallId), update));
  return true;
}
