/**
 * Turn state: what the proxy knows of each running `session/prompt` turn, per session.
 * Several sessions may run turns at once over one agent; each turn's state is its own.
 * `session/update` notifications are folded in by the pure `observeUpdate`.
 */
import type { ToolCallState } from "../plugin/api.ts";
import type { Snapshot } from "../cause/snapshot.ts";
import { applyToolCallUpdate, ToolCallBudget } from "../acp/tool_calls.ts";
import { idKey, isObject, type JsonRpcId, parseMessage, stringField } from "../acp/jsonrpc.ts";
import { bytesAt, peekChunkText, spanHead, spanText, type UpdatePeek } from "../acp/peek.ts";
import { keptBytes, ReplyText, type TextKeeping } from "./reply_text.ts";
import { type LastMessage, RESTART_GAP_MS } from "../cause/contradictions.ts";
import type { RecordsSnapshot } from "../cause/session_records.ts";
import type { AgentAttempt } from "../core/outcome.ts";

/** Most restart breaks a turn keeps (the first ones; a reply rarely restarts more). */
export const MAX_TEXT_BREAKS = 32;

/** Update kinds that show the agent is producing something (besides message text). */
export const ACTIVITY_KINDS: ReadonlySet<string> = new Set([
  "agent_message_chunk",
  "agent_thought_chunk",
  "tool_call",
  "tool_call_update",
  "plan",
]);

/** One running turn. */
export interface Turn {
  readonly sessionId: string;
  /** Per-session turn counter, from 1. */
  readonly turn: number;
  /** Which attempt of the turn this is: 0 the first, k the k-th retry. */
  readonly attempt: number;
  /** The client's `session/prompt` request id. */
  readonly requestId: JsonRpcId;
  /** The request id as the client wrote it (for responses turnguard builds). */
  readonly requestIdLexeme: string;
  /**
   * A copy of the prompt request's bytes as the client sent them, kept only when a retry
   * can resend them (`--retries` above 0) and within the proxy's budget of prompt copies
   * (Turns.keepPrompt); else null.
   */
  readonly promptLine: Uint8Array | null;
  /** The prompt request's `params._meta`, if any. */
  readonly promptMeta: unknown;
  readonly startedAt: number;
  /** The profile's logs as they were when the turn started. */
  readonly snapshot: Snapshot;
  /** The session's record files as they were when the turn started (null: none named). */
  readonly records: RecordsSnapshot | null;
  /** Whether tool calls are merged (someone reads `toolCalls`); else only counted. */
  readonly trackToolCalls: boolean;
  /** How much message text is kept (`reply`: the Outcome carries it as `reply.text`). */
  readonly keepText: TextKeeping;
  /** Characters of `agent_message_chunk` text streamed. */
  chars: number;
  /** Other output updates streamed (thoughts, tool calls, plans, non-text chunks). */
  activity: number;
  /** Message text kept (bounded: see `turnText`). */
  reply: ReplyText;
  /** Agent lines longer than the inspection limit passed during the turn (not read). */
  uninspected: number;
  /** Requests the agent sent the client during the turn (permission prompts, ...). */
  requests: number;
  /**
   * Tool calls merged by `toolCallId`, in order of first appearance. Tool call lines seen
   * by a peek are kept as bytes and merged when this is first read (or when they pile up).
   */
  readonly toolCalls: Map<string, ToolCallState>;
  /** Tool call lines not merged yet, and their size. */
  pendingToolLines: Uint8Array[];
  pendingToolBytes: number;
  /** The bytes the merged tool calls hold, against their budget (and updates dropped). */
  readonly toolCallBudget: ToolCallBudget;
  /** The client sent `session/cancel` for this session (or turnguard forwarded a signal). */
  cancelled: boolean;
  /** When the agent last showed life in this session (ms). */
  lastActivityAt: number;
  /**
   * Character offsets where message text resumed after a silence of RESTART_GAP_MS with
   * no other output between (where a retry may have re-streamed the answer).
   */
  textBreaks: number[];
  /** When message text last came; null: none yet, or other output came since. */
  lastTextAt: number | null;
  /** The last message the agent named by `messageId`, and its text characters. */
  lastMessage: LastMessage | null;
  /** The agent's own failed attempts observed live while the turn runs (lib/proxy/live.ts). */
  agentAttempts: AgentAttempt[];
  /** Stops following the turn's evidence (called once the turn is forgotten). */
  stopFollowing: () => void;
}

/** What a turn starts from. */
export interface TurnStart {
  sessionId: string;
  requestId: JsonRpcId;
  /** The request id as written; default: as JSON encodes it. */
  requestIdLexeme?: string;
  promptLine: Uint8Array | null;
  promptMeta: unknown;
  startedAt: number;
  snapshot: Snapshot;
  /** The session's record files at the start; default none. */
  records?: RecordsSnapshot | null;
  trackToolCalls: boolean;
  /** How much message text to keep; default `reply`. */
  keepText?: TextKeeping;
  /** Which attempt this is; default 0 (the first). */
  attempt?: number;
}

/** Unmerged tool call bytes a turn keeps before merging them on the spot. */
export const PENDING_TOOL_BYTES = 16 * 1024 * 1024;

/** A fresh turn's state. */
export function newTurn(start: TurnStart, turn: number): Turn {
  const calls = new Map<string, ToolCallState>();
  return {
    ...start,
    requestIdLexeme: start.requestIdLexeme ?? JSON.stringify(start.requestId),
    turn,
    attempt: start.attempt ?? 0,
    keepText: start.keepText ?? "reply",
    chars: 0,
    activity: 0,
    reply: new ReplyText(keptBytes(start.keepText ?? "reply")),
    uninspected: 0,
    requests: 0,
    get toolCalls() {
      mergePending(this);
      return calls;
    },
    pendingToolLines: [],
    pendingToolBytes: 0,
    toolCallBudget: new ToolCallBudget(),
    cancelled: false,
    lastActivityAt: start.startedAt,
    records: start.records ?? null,
    textBreaks: [],
    lastTextAt: null,
    lastMessage: null,
    agentAttempts: [],
    stopFollowing: () => {},
  };
}

/**
 * Notes message text coming at `now` (before it is counted): a break when it resumes after
 * a silent gap, and the characters of the message it belongs to.
 */
function noteText(turn: Turn, now: number, messageId: string | null, chars: number): void {
  if (
    turn.lastTextAt !== null && now - turn.lastTextAt >= RESTART_GAP_MS &&
    turn.textBreaks.length < MAX_TEXT_BREAKS
  ) {
    turn.textBreaks.push(turn.chars);
  }
  turn.lastTextAt = now;
  if (messageId !== null) {
    if (turn.lastMessage?.id !== messageId) turn.lastMessage = { id: messageId, chars: 0 };
    turn.lastMessage.chars += chars;
  }
}

/** Merges the tool call lines kept as bytes, in the order they came. */
function mergePending(turn: Turn): void {
  if (turn.pendingToolLines.length === 0) return;
  const lines = turn.pendingToolLines;
  turn.pendingToolLines = [];
  turn.pendingToolBytes = 0;
  const calls = turn.toolCalls;
  for (const line of lines) {
    const message = parseMessage(line);
    if (message?.kind === "notification" && isObject(message.params)) {
      applyToolCallUpdate(calls, message.params.update, turn.toolCallBudget, line.length);
    }
  }
}

/** Folds one `session/update`'s `update` object into the turn. */
export function observeUpdate(turn: Turn, update: unknown, now: number): void {
  if (!isObject(update)) return;
  const kind = stringField(update, "sessionUpdate");
  if (kind === null) return;
  turn.lastActivityAt = now;
  if (!ACTIVITY_KINDS.has(kind)) return;
  if (kind === "agent_message_chunk") {
    const text = textOf(update.content);
    const messageId = typeof update.messageId === "string" ? update.messageId : null;
    if (text === null) turn.activity++;
    else noteText(turn, now, messageId, text.length), addText(turn, text);
    return;
  }
  turn.activity++;
  turn.lastTextAt = null;
  if (turn.trackToolCalls && (kind === "tool_call" || kind === "tool_call_update")) {
    applyToolCallUpdate(turn.toolCalls, update, turn.toolCallBudget);
  }
}

/**
 * Folds in a canonical `session/update` line known by its peek (session and kind) without
 * parsing it: a message chunk's text is read from its bytes (the line is parsed only when
 * the text has escapes or another shape); tool call lines are kept as bytes and merged
 * when read; other kinds only count. The line is `line[peek.lineStart, peek.lineEnd)`.
 */
export function observeUpdateLine(
  turn: Turn,
  peek: UpdatePeek,
  line: Uint8Array,
  now: number,
): void {
  const kind = peek.kind;
  if (kind === "agent_message_chunk") {
    const span = peekChunkText(line, peek);
    if (span !== null) {
      turn.lastActivityAt = now;
      // Well-formed text is counted from its bytes, and only a head the reply can keep is
      // decoded (a long chunk is never held whole as a string). A cut head is longer than
      // the limit, so nothing after it is kept. Bytes that are not valid UTF-8 are decoded
      // whole: the decoder's replacement characters decide the count.
      // The canonical shape peekChunkText checked (`"sessionUpdate":KIND,"content":{"type":
      // "text","text":T}}}}`, T without quotes) has no room for a messageId: a line with
      // one is parsed below. `line` holds the other lines of its chunk too, so it is never
      // searched for one.
      if (span.units === null) {
        const text = spanText(line, span);
        noteText(turn, now, null, text.length);
        return addText(turn, text);
      }
      noteText(turn, now, null, span.units);
      turn.chars += span.units;
      if (turn.reply.open) {
        turn.reply.push(spanText(line, spanHead(line, span, turn.reply.limit + 4)));
      }
      return;
    }
    const message = parseMessage(line.subarray(peek.lineStart, peek.lineEnd));
    if (message?.kind === "notification" && isObject(message.params)) {
      observeUpdate(turn, message.params.update, now);
    } else {
      turn.lastActivityAt = now;
    }
    return;
  }
  turn.lastActivityAt = now;
  if (!ACTIVITY_KINDS.has(kind)) return;
  turn.activity++;
  turn.lastTextAt = null;
  if (!turn.trackToolCalls || (kind !== "tool_call" && kind !== "tool_call_update")) return;
  turn.pendingToolLines.push(line.slice(peek.lineStart, peek.lineEnd));
  turn.pendingToolBytes += peek.lineEnd - peek.lineStart;
  if (turn.pendingToolBytes > PENDING_TOOL_BYTES) mergePending(turn);
}

function textOf(content: unknown): string | null {
  if (!isObject(content) || content.type !== "text") return null;
  return typeof content.text === "string" ? content.text : null;
}

function addText(turn: Turn, text: string): void {
  turn.chars += text.length;
  turn.reply.push(text);
}

/**
 * Counts an agent line too long to inspect as output of the turn: its text is not read,
 * but the agent did stream something (so the turn is never taken for an empty one).
 */
export function observeUninspected(turn: Turn, now: number): void {
  turn.uninspected++;
  turn.activity++;
  turn.lastActivityAt = now;
}

/** The session an over-limit line names in its first bytes (`"sessionId":"..."`), if any. */
export function sessionIdInPrefix(prefix: string): string | null {
  const m = prefix.match(/"sessionId"\s*:\s*"((?:[^"\\]|\\.)*)"/);
  if (!m) return null;
  try {
    return JSON.parse(`"${m[1]}"`) as string;
  } catch {
    return null;
  }
}

/**
 * The turn's message text as far as it was kept (see `keepText`): at most REPLY_TEXT_BYTES
 * of UTF-8, cut on a character.
 */
export function turnText(turn: Turn): string {
  return turn.reply.text();
}

/** Whether all of the turn's message text was kept (none was cut or left uncounted). */
export function wholeText(turn: Turn, text: string): boolean {
  return text.length === turn.chars;
}

/** Everything streamed, for `decide`'s `output`: message characters plus other updates. */
export function streamed(turn: Turn): number {
  return turn.chars + turn.activity;
}

/**
 * Whether a turn already reached the client: anything streamed (text, thoughts, tools), or
 * a request the agent sent it (a permission prompt). Such a turn is not retried.
 */
export function reachedClient(turn: Turn): boolean {
  return streamed(turn) > 0 || turn.requests > 0;
}

/**
 * Default bytes of prompt copies one proxy keeps for retries, over every turn that is
 * running or waiting for its retry (a client picks a prompt's size, up to the inspection
 * limit, and how many it sends).
 */
export const PROMPT_COPY_BYTES = 64 * 1024 * 1024;

/** The running turns of every session on one agent connection. */
export class Turns {
  /** Bytes of the prompt copies kept now, and the copies themselves (each counted once). */
  #promptBytes = 0;
  #kept = new WeakSet<Uint8Array>();
  readonly promptLimit: number;

  constructor(promptLimit: number = PROMPT_COPY_BYTES) {
    this.promptLimit = promptLimit;
  }

  /**
   * A copy of a prompt's bytes for its retries, charged to the budget of prompt copies;
   * null when it does not fit (its turn then cannot be retried).
   */
  keepPrompt(line: Uint8Array): Uint8Array | null {
    if (this.#promptBytes + line.length > this.promptLimit) return null;
    const copy = line.slice();
    this.#kept.add(copy);
    this.#promptBytes += copy.length;
    return copy;
  }

  /** The turn's prompt copy is no longer needed (no retry of it will run): frees its bytes. */
  releasePrompt(turn: Turn): void {
    const copy = turn.promptLine;
    if (copy !== null && this.#kept.delete(copy)) this.#promptBytes -= copy.length;
  }

  /** Bytes of prompt copies kept now. */
  get promptBytes(): number {
    return this.#promptBytes;
  }

  #counters = new Map<string, number>();
  #bySession = new Map<string, Turn>();
  #byRequest = new Map<string, Turn>();
  /** The running sessions' ids as UTF-8, for lines looked at as bytes. */
  #keys = new Map<string, Uint8Array>();
  /** `#keys` as an array: looked through for every line, without an iterator each time. */
  #keyList: { sessionId: string; key: Uint8Array }[] = [];

  /** Starts a turn for a `session/prompt` request. */
  start(start: TurnStart): Turn {
    const n = (this.#counters.get(start.sessionId) ?? 0) + 1;
    this.#counters.set(start.sessionId, n);
    const turn = newTurn(start, n);
    this.#track(turn);
    return turn;
  }

  /**
   * Starts retry `attempt` of an ended turn: a fresh state under the same number and
   * request id, from a new start time and log snapshot.
   */
  retry(
    turn: Turn,
    attempt: number,
    startedAt: number,
    snapshot: Snapshot,
    records: RecordsSnapshot | null = null,
  ): Turn {
    const fresh = newTurn({
      sessionId: turn.sessionId,
      requestId: turn.requestId,
      requestIdLexeme: turn.requestIdLexeme,
      promptLine: turn.promptLine,
      promptMeta: turn.promptMeta,
      startedAt,
      snapshot,
      records,
      trackToolCalls: turn.trackToolCalls,
      keepText: turn.keepText,
      attempt,
    }, turn.turn);
    this.#track(fresh);
    return fresh;
  }

  /** Follows each turn it starts while it runs (set once by the proxy); returns the stop. */
  follow: ((turn: Turn) => () => void) | null = null;

  #track(turn: Turn): void {
    if (this.follow) turn.stopFollowing = this.follow(turn);
    this.#bySession.set(turn.sessionId, turn);
    this.#keys.set(turn.sessionId, new TextEncoder().encode(turn.sessionId));
    this.#listKeys();
    this.#byRequest.set(idKey(turn.requestId), turn);
  }

  /** The turn running in a session (the newest, should a client overlap prompts). */
  forSession(sessionId: string): Turn | undefined {
    return this.#bySession.get(sessionId);
  }

  /** The turn running in the session whose id is `line[start, end)` (UTF-8 bytes). */
  forSessionBytes(line: Uint8Array, start: number, end: number): Turn | undefined {
    const list = this.#keyList;
    for (let i = 0; i < list.length; i++) {
      const key = list[i].key;
      if (key.length === end - start && bytesAt(line, start, key)) {
        return this.#bySession.get(list[i].sessionId);
      }
    }
    return undefined;
  }

  /** The turn a `session/prompt` request started. */
  forRequest(id: JsonRpcId): Turn | undefined {
    return this.#byRequest.get(idKey(id));
  }

  /** Forgets an ended turn (and stops following its evidence). */
  end(turn: Turn): void {
    turn.stopFollowing();
    this.#byRequest.delete(idKey(turn.requestId));
    if (this.#bySession.get(turn.sessionId) === turn) {
      this.#bySession.delete(turn.sessionId);
      this.#keys.delete(turn.sessionId);
      this.#listKeys();
    }
  }

  #listKeys(): void {
    this.#keyList = [...this.#keys].map(([sessionId, key]) => ({ sessionId, key }));
  }

  /** Number of running turns. */
  get size(): number {
    return this.#byRequest.size;
  }

  /** Every running turn. */
  all(): Turn[] {
    return [...this.#byRequest.values()];
  }
}
