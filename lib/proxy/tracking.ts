/**
 * Turn tracking: a client's `session/prompt` starts a turn (with the profile's logs and the
 * session's record files as they were), a retry starts the same turn again, and a request
 * past the in-flight cap is refused.
 */
import { errorText } from "../errors.ts";
import { encodeResponse, idKey, type JsonRpcId } from "../acp/jsonrpc.ts";
import { lineEnding } from "../acp/lines.ts";
import { snapshotProfileLogs } from "../cause/log_cause.ts";
import { type RecordsSnapshot, snapshotSessionRecords } from "../cause/session_records.ts";
import { idLexemeOf } from "./long_lines.ts";
import { DEFAULT_MAX_PENDING } from "./options.ts";
import { refusedResponse, shown } from "./answer_rules.ts";
import type { ClientAnswers } from "./answers.ts";
import type { ProxyState } from "./state.ts";
import { publishArmed, type TurnEndSteps } from "./turn_end.ts";
import type { Turn } from "./turns.ts";
import { DROP, type Verdict } from "./relay.ts";

/** What a `session/prompt` starts a turn from. */
export interface PromptRequest {
  id: JsonRpcId;
  sessionId: string;
  /** The request's bytes, as the client sent them (a retry sends them again). */
  line: Uint8Array;
  /** Its id as the client wrote it. */
  idLexeme: string;
  /** Its `params._meta` (undefined when not read). */
  meta: unknown;
}

/** Starts a turn for a client's `session/prompt` and journals its start. */
export function startTurn(
  state: ProxyState,
  steps: TurnEndSteps,
  prompt: PromptRequest,
  now: number,
): Turn {
  const { opts } = state;
  const turn = state.turns.start({
    sessionId: prompt.sessionId,
    requestId: prompt.id,
    requestIdLexeme: prompt.idLexeme,
    // Kept only when a retry can use it, and then within the budget of prompt copies.
    promptLine: opts.retryWaits ? state.turns.keepPrompt(prompt.line) : null,
    promptMeta: prompt.meta,
    startedAt: now,
    snapshot: snapshotProfileLogs(
      opts.profile,
      opts.env,
      now,
      opts.fs,
      sessionCwd(state, prompt.sessionId),
    ),
    records: snapshotRecords(state, prompt.sessionId, now),
    trackToolCalls: publishArmed(steps),
    keepText: state.keepText,
  });
  state.log(`session ${turn.sessionId} turn ${turn.turn}: started (request ${idKey(prompt.id)})`);
  try {
    steps.recorder?.started(
      { session: turn.sessionId, turn: turn.turn },
      { mode: "proxy", agent: opts.profile.name, promptId: turn.requestId },
    );
  } catch (err) {
    state.log(`recording the turn's start failed: ${errorText(err)}`);
  }
  return turn;
}

/** Starts retry `attempt` of an ended turn (its request waits again: the caller says so). */
export function restartTurn(state: ProxyState, failed: Turn, attempt: number, now: number): Turn {
  const { opts } = state;
  const turn = state.turns.retry(
    failed,
    attempt,
    now,
    snapshotProfileLogs(opts.profile, opts.env, now, opts.fs, sessionCwd(state, failed.sessionId)),
    snapshotRecords(state, failed.sessionId, now),
  );
  return turn;
}

/** The session's record files before its turn; null when the profile names none. */
function snapshotRecords(
  state: ProxyState,
  sessionId: string,
  now: number,
): RecordsSnapshot | null {
  const { profile, env, fs } = state.opts;
  if (!profile.sessionRecords?.length) return null;
  return snapshotSessionRecords(profile, env, sessionId, now, fs, sessionCwd(state, sessionId));
}

/**
 * `{cwd}` for a session's turns: the cwd the client opened (or loaded) it with, else the
 * agent's own working directory.
 */
export function sessionCwd(state: ProxyState, sessionId: string): string {
  return state.sessionCwds.get(sessionId) ?? state.opts.cwd ?? process.cwd();
}

/**
 * A request past `maxPending` of its side: not forwarded (remembering it would grow
 * turnguard without bound), answered by turnguard at once with a retryable error (the
 * client's through its answers, lib/proxy/answers.ts).
 */
export function refuse(
  state: ProxyState,
  from: { client: ClientAnswers } | "agent",
  id: JsonRpcId,
  line: Uint8Array,
): Verdict {
  const max = state.opts.maxPending ?? DEFAULT_MAX_PENDING;
  const pending = from === "agent" ? state.agentPending : state.clientPending;
  const what = pending.size >= max
    ? `${max}`
    : `${pending.size}, holding ${pending.bytes} bytes of ids`;
  const message = `turnguard: too many requests in flight (${what}); this one was not forwarded`;
  // The id is the peer's choice, of any length: the log line names its start.
  const side = from === "agent" ? "agent" : "client";
  state.log(`refused ${side} request ${shown(id)}: ${what} requests in flight`);
  const idLexeme = idLexemeOf(line, id);
  if (from !== "agent") return from.client.refused(id, idLexeme, lineEnding(line), message);
  state.toAgent.inject(encodeResponse(refusedResponse(id, message), idLexeme, lineEnding(line)));
  return DROP;
}

/** The client answered the agent's request `id`: its session's silence clock restarts. */
export function clientAnswered(state: ProxyState, id: JsonRpcId, now: number): void {
  const request = state.agentPending.take(id);
  const turn = request?.sessionId ? state.turns.forSession(request.sessionId) : undefined;
  if (turn) turn.lastActivityAt = now;
}
