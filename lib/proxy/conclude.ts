/**
 * The end of a proxied turn: from the turn's state and how it ended (the agent's result or
 * error, turnguard's silence timeout, or the agent's death) to the turn's Outcome and the
 * response the client gets instead of the agent's, if any. The log scan is passed in as a
 * function, called only when the decision needs it.
 */
import { classify, textCause, timeoutCause } from "../cause/classify.ts";
import type { Classifier } from "../cause/classifier.ts";
import {
  type Cause,
  decide,
  type Decision,
  evidenceBeyondWire,
  needsLogCause,
} from "../core/decide.ts";
import { buildCause } from "../core/cause.ts";
import { buildOutcome } from "../core/build_outcome.ts";
import type { LogCauseResult } from "../cause/log_cause.ts";
import type { AgentAttempt, Outcome } from "../core/outcome.ts";
import { earlyCause, type EndEarly } from "../core/end_early.ts";
import { attemptsNote, attemptsSummary } from "../cause/agent_attempts.ts";
import { signalExitCode } from "../agent/signals.ts";
import { capUtf8, formatDuration, utf8Length } from "../text/text.ts";
import { REPLY_TEXT_BYTES } from "../agent/launch.ts";
import { errorCause, type ErrorStop, errorStopReason } from "../cause/error_cause.ts";
import { type JsonObject, stringField } from "../acp/jsonrpc.ts";
import { annotateError, errorResponse, incompleteResponse, turnguardData } from "./rewrite.ts";
import type { LoadedRecordReader } from "../plugin/api.ts";
import type { RecordsRead } from "../cause/session_records.ts";
import { type BeyondWire, gatherBeyondWire, readRecords } from "./beyond_wire.ts";
import { type NoticeReading, readNotices } from "../cause/notices.ts";
import { FAILURE_TEXT_MAX_BYTES } from "./reply_text.ts";
import { streamed, type Turn, turnText, wholeText } from "./turns.ts";

/** How a turn ended. */
export type TurnEnd =
  | { kind: "result"; result: unknown; response: JsonObject }
  | { kind: "error"; error: JsonObject; response: JsonObject }
  | { kind: "timeout"; silentMs: number }
  /** `--fail-fast` ended it: the agent was retrying a cause retrying cannot cure. */
  | { kind: "early"; early: EndEarly }
  | {
    kind: "exit";
    code: number | null;
    signal: string | null;
    stderrTail: string;
    /** The client had closed its input before the agent died. */
    clientGone?: boolean;
  };

/** Everything the conclusion needs besides the turn. */
export interface ConcludeInput {
  turn: Turn;
  end: TurnEnd;
  agent: string;
  /** The profile's classifier (its anchors in the matcher's order). */
  classifier: Classifier;
  endedAt: number;
  /** Scans the turn's log bytes (snapshot → now); called only when needed. */
  scanLogs: () => LogCauseResult;
  /** `--rewrite-errors`: HTTP-status codes become -32603, messages the readable cause. */
  rewriteErrors: boolean;
  /** The turn's session records, as the wait for their end left them (absent: none named). */
  records?: RecordsRead | null;
  /** The profile's session record readers. */
  readers?: readonly LoadedRecordReader[];
  /** `--strict-turns`: an incomplete answer the agent ended as whole becomes an error. */
  strictTurns?: boolean;
  /** `--recover-replies`: a reply recovered from the records is delivered to the client. */
  recoverReplies?: boolean;
}

/** The turn's Outcome and, when turnguard answers instead of the agent, the response. */
export interface Conclusion {
  outcome: Outcome;
  decision: Decision;
  /** The response to send the client instead of the agent's; null: forward the agent's. */
  response: JsonObject | null;
  /**
   * The whole final answer recovered from the records (`reply.recovered` keeps only its
   * first REPLY_TEXT_BYTES): what `--recover-replies` sends, so a client told the turn is
   * `ok` lacks none of it. Bounded by the records' read budget (lib/io/bounded_read.ts).
   */
  recoveredText: string | null;
}

/** The message of an agent that died: `agent exited with status N: <stderr tail>`. */
export function exitMessage(code: number | null, signal: string | null, tail: string): string {
  const status = signal !== null
    ? `agent exited with status ${signalExitCode(signal)} (killed by ${signal})`
    : `agent exited with status ${code ?? "unknown"}`;
  return tail.trim() ? `${status}: ${tail.trim()}` : status;
}

/**
 * The cause of a turn cut short for silence, with what the agent was doing when its live
 * evidence said (`; the agent was retrying a 503 (capacity), attempt 14`).
 */
export function silenceCause(silentMs: number, attempts: readonly AgentAttempt[] = []): Cause {
  const doing = attemptsSummary(attempts);
  return timeoutCause(
    `turn timed out: the agent streamed nothing for ${formatDuration(silentMs)}${
      doing ? `; ${doing}` : ""
    }`,
  );
}

/** Decides the turn and builds its Outcome and replacement response. */
export function concludeTurn(input: ConcludeInput): Conclusion {
  const { turn, end, classifier, endedAt } = input;
  const diagnostics: string[] = [];
  const stopReason = end.kind === "result" ? stringField(end.result, "stopReason") : null;
  const output = streamed(turn);

  let agentError: Cause | null = null;
  let errorStop: ErrorStop | null = null;
  if (end.kind === "error") {
    const found = errorCause(end.error, classifier, endedAt);
    diagnostics.push(...found.diagnostics);
    agentError = found.cause;
    errorStop = errorStopReason(end.error);
    if (errorStop !== null) {
      diagnostics.push(
        `the agent reported the stop reason ${errorStop} as an error: ${found.cause.error.message}`,
      );
    }
  } else if (end.kind === "exit") {
    const message = exitMessage(end.code, end.signal, end.stderrTail);
    const { category, retry } = classify(end.stderrTail, undefined, classifier, endedAt);
    agentError = buildCause({ code: end.code, message, category, retry });
  }
  const timeout = end.kind === "timeout" ? silenceCause(end.silentMs, turn.agentAttempts) : null;
  const endedEarly = end.kind === "early" ? earlyCause(end.early) : null;
  const exit = end.kind === "exit" ? { code: end.code, signal: end.signal } : null;
  const clientGone = end.kind === "exit" && end.clientGone === true;
  let logCause: Cause | null = null;
  const notices = noticeReading(turn, classifier, endedAt, diagnostics);

  if (
    needsLogCause({
      cancelled: turn.cancelled,
      clientGone,
      exit,
      timeout,
      endedEarly,
      agentError,
      output,
      notices: notices?.facts ?? null,
      replyChars: turn.chars,
    })
  ) {
    const scanned = input.scanLogs();
    diagnostics.push(...scanned.diagnostics);
    logCause = scanned.cause;
  }

  // Evidence beyond the wire (docs/EVIDENCE.md), as much of it as decide says can count.
  const evidence = {
    records: input.records ?? null,
    readers: input.readers ?? [],
    classifier,
    now: endedAt,
  };
  const wanted = evidenceBeyondWire({
    cancelled: turn.cancelled,
    stopReason,
    agentError,
    diedMidTurn: end.kind === "exit",
    timeout,
  });
  const beyond: BeyondWire | null = end.kind === "result" && wanted.contradictions
    ? gatherBeyondWire({ turn, result: end.result, stopReason, ...evidence }, diagnostics)
    : null;
  const records = !beyond && wanted.records
    ? readRecords(evidence, diagnostics)?.facts ?? null
    : null;

  const decision = decide({
    cancelled: turn.cancelled,
    clientGone,
    exit,
    diedMidTurn: end.kind === "exit",
    stopReason,
    agentError,
    errorStop,
    output,
    logCause,
    timeout,
    endedEarly,
    textCause: streamedTextCause(turn, classifier, endedAt, diagnostics),
    ...beyond?.facts,
    ...(records ? { records } : {}),
    replyChars: turn.chars,
    notices: notices?.facts ?? null,
    recoverReplies: input.recoverReplies === true,
  });
  diagnostics.push(...decision.notes ?? []);

  if (turn.uninspected > 0) {
    diagnostics.push(
      `${turn.uninspected} agent line(s) longer than the inspection limit passed through unread; reply.chars does not count their text`,
    );
  }
  const outcome = buildOutcome({
    mode: "proxy",
    agent: input.agent,
    session: turn.sessionId,
    turn: turn.turn,
    startedAt: turn.startedAt,
    endedAt,
    stopReason,
    exit,
    reply: withRecovered(
      beyond?.finalText != null
        ? { chars: beyond.finalText.length, text: beyond.finalText }
        : notices && notices.text !== turnText(turn) && turn.keepText === "reply"
        ? { chars: notices.text.length, text: notices.text }
        : turn.keepText === "reply"
        ? { chars: turn.chars, text: turnText(turn) }
        : { chars: turn.chars },
      decision.recovered ? beyond?.unsentText ?? null : null,
      diagnostics,
    ),
    publish: null,
    diagnostics,
  }, decision);
  if (turn.agentAttempts.length > 0) outcome.agentAttempts = [...turn.agentAttempts];
  const left = attemptsNote(turn.agentAttempts);
  if (left) outcome.diagnostics.push(left);
  if (end.kind === "early") outcome.endedEarly = { reason: end.early.reason };
  return {
    outcome,
    decision,
    response: replacement(input, outcome, decision),
    recoveredText: decision.recovered ? beyond?.unsentText ?? null : null,
  };
}

/**
 * The reply with the final answer recovered from the records (`reply.recovered`), kept to
 * its first REPLY_TEXT_BYTES like `reply.text`; as it is when there is none.
 */
function withRecovered(
  reply: Outcome["reply"],
  recovered: string | null,
  diagnostics: string[],
): Outcome["reply"] {
  if (recovered === null) return reply;
  const kept = capUtf8(recovered, REPLY_TEXT_BYTES);
  if (kept !== recovered) {
    diagnostics.push(
      `reply.recovered keeps the first ${REPLY_TEXT_BYTES} bytes of the ${recovered.length} characters recovered`,
    );
  }
  return { ...reply, recovered: kept };
}

/**
 * The agent's own notices in the turn's streamed text (lib/cause/notices.ts), read only
 * when all of the text was kept; diagnostics say what was found.
 */
function noticeReading(
  turn: Turn,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): NoticeReading | null {
  if (turn.chars === 0) return null;
  const text = turnText(turn);
  if (!wholeText(turn, text)) return null;
  const reading = readNotices(text, classifier, now, diagnostics);
  if (reading.text !== text && turn.keepText === "reply") {
    diagnostics.push(
      `reply.text leaves out ${
        reading.notices.filter((n) => n.declared).length
      } notice(s) the profile declares (notices)`,
    );
  }
  return reading;
}

/**
 * The failure a turn's short streamed text reads as (lib/cause/classify.ts `textCause`),
 * which sharpens a generic agent error or, in a turn that ended normally, is only a note
 * (the agent's notices are told apart by `noticeReading`). Only short text is read: text
 * cut short (or never kept) is a longer reply than a notice.
 */
function streamedTextCause(
  turn: Turn,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): Cause | null {
  if (turn.chars === 0) return null;
  const text = turnText(turn);
  if (!wholeText(turn, text) || utf8Length(text) >= FAILURE_TEXT_MAX_BYTES) return null;
  return textCause(text, classifier, now, diagnostics);
}

function replacement(
  input: ConcludeInput,
  outcome: Outcome,
  decision: Decision,
): JsonObject | null {
  const { end, turn } = input;
  const data = turnguardData(outcome);
  switch (end.kind) {
    case "result":
      if (decision.status === "failed" && decision.swallowed && decision.error) {
        return errorResponse(turn.requestId, decision.error.message, data);
      }
      // A reply cut short (or refused) while the agent said end_turn: only with
      // --strict-turns does the client get an error; otherwise the Outcome says it.
      if (input.strictTurns && decision.swallowed) {
        return incompleteResponse(turn.requestId, outcome, turnText(turn));
      }
      return null;
    case "error":
      return annotateError(end.response, data, input.rewriteErrors);
    case "timeout":
      return errorResponse(turn.requestId, outcome.error?.message ?? "turn timed out", data);
    case "early":
      // The true error, with the attempts seen and why the turn was not left to run.
      return errorResponse(turn.requestId, outcome.error?.message ?? end.early.attempt.cause, {
        ...data,
        attempts: outcome.agentAttempts ?? [],
        endedEarly: end.early.reason,
      });
    case "exit":
      return errorResponse(
        turn.requestId,
        exitMessage(end.code, end.signal, end.stderrTail),
        data,
      );
  }
}
