/**
 * Tool call state joined by `toolCallId`: agents spread one call's title, rawInput, status
 * and result over a `tool_call` and several `tool_call_update`s, so a call is only known
 * once they are merged. Protocol, not publish: pure, shared by the proxy, the publish engine
 * and the plugin API (a detector sees a call's merged state).
 */
import * as v from "valibot";
import { once } from "../once.ts";
import { isObject } from "./jsonrpc.ts";

/** A tool call's merged state, joined by toolCallId across tool_call and tool_call_update. */
export const ToolCallStateSchema = once(() =>
  v.looseObject({
    toolCallId: v.string(),
    title: v.optional(v.nullable(v.string())),
    kind: v.optional(v.nullable(v.string())),
    status: v.optional(v.nullable(v.string())),
    rawInput: v.optional(v.unknown()),
    rawOutput: v.optional(v.unknown()),
    content: v.optional(v.unknown()),
    _meta: v.optional(v.unknown()),
  })
);
/** A tool call's merged state as a detector sees it (see ToolCallStateSchema). */
export type ToolCallState = v.InferOutput<ReturnType<typeof ToolCallStateSchema>>;

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
 * Default bytes a turn's merged tool calls may hold (see ToolCallBudget): an agent chooses
 * how many calls a turn makes and how large their inputs and results are.
 */
export const TOOL_CALL_BYTES = 16 * 1024 * 1024;

/**
 * What a turn's merged tool calls hold, in bytes, against their budget; updates that would
 * take them past it are dropped and counted. A call's size is, for each of its fields, the
 * size of the update that last set it: an upper bound of what the field holds, known
 * without serializing anything.
 */
export class ToolCallBudget {
  readonly limit: number;
  #fields = new Map<string, Map<string, number>>();
  #sizes = new Map<string, number>();
  #total = 0;
  /** Updates dropped because they did not fit. */
  dropped = 0;

  constructor(limit: number = TOOL_CALL_BYTES) {
    this.limit = limit;
  }

  /** Bytes held now. */
  get total(): number {
    return this.#total;
  }

  /**
   * Whether an update of `bytes` that sets `fields` of call `id` fits; if so, it is
   * charged (in place of what those fields held).
   */
  fit(id: string, fields: readonly string[], bytes: number): boolean {
    const next = new Map(this.#fields.get(id));
    for (const f of fields) next.set(f, bytes);
    let size = id.length;
    for (const n of next.values()) size += n;
    const total = this.#total - (this.#sizes.get(id) ?? 0) + size;
    if (total > this.limit) {
      this.dropped++;
      return false;
    }
    this.#fields.set(id, next);
    this.#sizes.set(id, size);
    this.#total = total;
    return true;
  }
}

/**
 * Applies one `session/update` `update` object to a turn's calls by id; anything that is
 * not a tool call update is ignored. Returns whether it was one. With a `budget`, an
 * update that would take the calls past it is dropped (and counted there); `bytes` is the
 * size of the line it came in (default: its JSON's length).
 */
export function applyToolCallUpdate(
  calls: Map<string, ToolCallState>,
  update: unknown,
  budget?: ToolCallBudget,
  bytes?: number,
): boolean {
  if (!isToolCallUpdate(update)) return false;
  if (budget) {
    const fields = Object.keys(update).filter((k) => k !== "sessionUpdate" && k !== "toolCallId");
    if (!budget.fit(update.toolCallId, fields, bytes ?? jsonLength(update))) return true;
  }
  calls.set(update.toolCallId, mergeToolCall(calls.get(update.toolCallId), update));
  return true;
}

/** The length of a value's JSON (0 when it has none). */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}
