/**
 * What the client receives for each of its requests, decided in one place. A pure function:
 * what is known of one request id (`RequestView`) and what just happened to it
 * (`AnswerEvent`) in, the answer as data (`Answer`) out. `ClientAnswers`
 * (lib/proxy/answers.ts) is the shell that keeps the views and applies the answers.
 *
 * The guarantee it keeps: every client request gets exactly one answer, whatever the agent
 * sends. The agent's response answers its request, unless turnguard already did (a silent
 * turn's timeout, a prompt answered early): then the agent's late response is swallowed,
 * and so is a second response to an id already answered. A request still unanswered at the
 * end (the agent exited — after the client left, turnguard stops it) gets turnguard's error.
 * A response to an id the client never used (as far as turnguard could read) passes as it
 * is: it answers nothing turnguard knows of.
 *
 * Two ways in for what comes next:
 * - **Answer a prompt now with an error** (the agent's true failure, seen before it answers):
 *   the event `{ kind: "now", end }` (`ClientAnswers.answerNow`); `end` is how the turn
 *   ended, concluded like any other (`concludeTurn`), and the agent's later response to the
 *   prompt is swallowed. A new kind of `TurnEnd` needs its line in `fallbackResponse` too.
 * - **Send a message before a prompt's response** (a reply recovered from the session
 *   records): `ClientAnswers.before(turn, line)`; the line goes out right before whatever
 *   answers the turn's prompt, whoever answers it.
 */
import { idKey, type JsonObject, type JsonRpcId, type Message } from "../acp/jsonrpc.ts";
import { exitMessage, silenceCause, type TurnEnd } from "./conclude.ts";
import { crashData, errorResponse, overloadData, turnguardData } from "./rewrite.ts";

/** What is known of one request id when something happens to it. */
export interface RequestView {
  /** The id (as parsed). */
  id: JsonRpcId;
  /** The client's oldest request waiting under the id; null: none waits. */
  pending: { answered: boolean } | null;
  /**
   * The running turn that request's prompt started; null: none. `silentMs`: the turn was
   * sent a `session/cancel` after that much silence, and its grace runs (else null).
   */
  turn: { silentMs: number | null } | null;
  /** An answer under this id already went to the client (and the client did not reuse it). */
  answeredBefore: boolean;
}

/** What happened to one request id. */
export type AnswerEvent =
  /** The agent's response line, read. */
  | { kind: "response"; message: Extract<Message, { kind: "result" | "error" }> }
  /** The agent's response line, too long or too deep to read: it goes through unread. */
  | { kind: "unread"; isError: boolean; why: string }
  /** A response inside the agent's batch line (the line passes whole, whatever is in it). */
  | { kind: "in-batch"; message: Extract<Message, { kind: "result" | "error" }> }
  /** A silent turn's grace after its `session/cancel` is over. */
  | { kind: "silence"; silentMs: number }
  /** The agent is gone; `clientGone`: the client had closed its input before. */
  | {
    kind: "exit";
    code: number | null;
    signal: string | null;
    stderrTail: string;
    clientGone: boolean;
  }
  /** turnguard answers the prompt now: its turn ended this way (fail-fast). */
  | { kind: "now"; end: TurnEnd }
  /** A request past the in-flight cap: never sent to the agent, answered at once. */
  | { kind: "refused"; message: string };

/**
 * What becomes of the request's entry: `take` (no longer waits), `mark` (answered by
 * turnguard; it waits for the agent's late response only to swallow it), `keep`.
 */
export type Settle = "take" | "mark" | "keep";

/** The answer, as data. */
export type Answer =
  /** The agent's line goes to the client as it is; `diagnostic`: what is odd about it. */
  | { kind: "forward"; settle: Settle; diagnostic?: string }
  /** The agent's line is dropped; `diagnostic` says why. */
  | { kind: "swallow"; settle: Settle; diagnostic: string }
  /**
   * The turn ended: its end (lib/proxy/finish.ts, turn_end.ts) decides the bytes, from the
   * agent's line (`agentLine`) or not; `fallback` answers should that fail.
   */
  | {
    kind: "end-turn";
    settle: Settle;
    end: TurnEnd;
    agentLine: boolean;
    fallback: JsonObject | null;
  }
  /** The agent's response went through unread: the turn is ended and recorded, not rewritten. */
  | { kind: "end-unread"; settle: Settle; end: TurnEnd; note: string }
  /** turnguard answers with this response. */
  | { kind: "send"; settle: Settle; response: JsonObject }
  /** Nothing to send. */
  | { kind: "none"; settle: Settle };

/** Decides what the client receives when `event` happens to the request `view` describes. */
export function answer(view: RequestView, event: AnswerEvent): Answer {
  const { pending, turn, id } = view;
  switch (event.kind) {
    case "refused":
      return { kind: "send", settle: "keep", response: refusedResponse(id, event.message) };
    case "response":
    case "unread":
    case "in-batch": {
      if (pending === null) {
        if (!view.answeredBefore) return forward("keep");
        // A line turnguard does not read whole streams through: it cannot be dropped.
        if (event.kind !== "response") return forward("keep", passedOn(event, "second", id));
        const diagnostic = `dropped the agent's second response to request ${shown(id)}`;
        return { kind: "swallow", settle: "keep", diagnostic };
      }
      if (pending.answered) {
        if (event.kind !== "response") return forward("take", passedOn(event, "late", id));
        const diagnostic = `dropped the agent's late response to request ${shown(id)}`;
        return { kind: "swallow", settle: "take", diagnostic };
      }
      if (turn === null) return forward("take");
      if (event.kind === "response") {
        // A turn cut short for silence ends as its timeout, whatever the agent answers.
        const end: TurnEnd = turn.silentMs !== null
          ? { kind: "timeout", silentMs: turn.silentMs }
          : agentEnd(event.message);
        return { kind: "end-turn", settle: "take", end, agentLine: true, fallback: null };
      }
      const note = event.kind === "unread"
        ? `the agent's response was ${event.why}: forwarded unread, not rewritten`
        : "the agent's response came in a batch: forwarded as it is, not rewritten";
      const end: TurnEnd = event.kind === "in-batch"
        ? agentEnd(event.message)
        : event.isError
        ? { kind: "error", error: { code: null, message: note }, response: {} }
        : { kind: "result", result: {}, response: {} };
      return { kind: "end-unread", settle: "take", end, note };
    }
    case "silence":
      return answerNow(view, { kind: "timeout", silentMs: event.silentMs });
    case "now":
      return answerNow(view, event.end);
    case "exit": {
      if (pending === null || pending.answered) return { kind: "none", settle: "take" };
      const end: TurnEnd = {
        kind: "exit",
        code: event.code,
        signal: event.signal,
        stderrTail: event.stderrTail,
        clientGone: event.clientGone,
      };
      const fallback = fallbackResponse(id, end)!;
      if (turn === null) return { kind: "send", settle: "take", response: fallback };
      return { kind: "end-turn", settle: "take", end, agentLine: false, fallback };
    }
  }
}

/** turnguard answers a prompt's turn before the agent does; the agent's answer is swallowed. */
function answerNow(view: RequestView, end: TurnEnd): Answer {
  if (view.pending === null || view.pending.answered || view.turn === null) {
    return { kind: "none", settle: "keep" };
  }
  const fallback = fallbackResponse(view.id, end);
  return { kind: "end-turn", settle: "mark", end, agentLine: false, fallback };
}

/**
 * The answer to a prompt whose turn's end failed (a bug): the same message the turn's end
 * would have sent (`concludeTurn`'s replacement), with turnguard's reading of the cause
 * alone; null where the agent's own response is the answer.
 */
export function fallbackResponse(id: JsonRpcId, end: TurnEnd): JsonObject | null {
  switch (end.kind) {
    case "result":
    case "error":
      return null;
    case "timeout": {
      const cause = silenceCause(end.silentMs);
      return errorResponse(
        id,
        cause.error.message,
        turnguardData({
          status: "failed",
          error: cause.error,
          retry: cause.retry,
          stopReason: null,
        }),
      );
    }
    case "exit": {
      return crashResponse(id, exitMessage(end.code, end.signal, end.stderrTail), end.code);
    }
  }
}

/**
 * The answer to a request the agent can no longer answer (it exited, or never started):
 * `message` says why, `code` is its exit status.
 */
export function crashResponse(id: JsonRpcId, message: string, code: number | null): JsonObject {
  return errorResponse(id, message, crashData(message, code));
}

/** The answer to a request refused past the in-flight cap. */
export function refusedResponse(id: JsonRpcId, message: string): JsonObject {
  return errorResponse(id, message, overloadData(message));
}

function forward(settle: Settle, diagnostic?: string): Answer {
  return diagnostic === undefined
    ? { kind: "forward", settle }
    : { kind: "forward", settle, diagnostic };
}

/** How the agent's own response ends its turn. */
function agentEnd(message: Extract<Message, { kind: "result" | "error" }>): TurnEnd {
  return message.kind === "result"
    ? { kind: "result", result: message.result, response: message.raw }
    : { kind: "error", error: message.error, response: message.raw };
}

/** A late or second response turnguard could not drop (it did not read the line whole). */
function passedOn(
  event: { kind: "unread"; why: string } | { kind: "in-batch" },
  what: "late" | "second",
  id: JsonRpcId,
): string {
  const how = event.kind === "unread" ? `was ${event.why}` : "came in a batch";
  return `the agent's ${what} response to request ${shown(id)} ${how}; it went through`;
}

/** An id as a log line names it: the peer chooses its length, so only its start. */
export function shown(id: JsonRpcId): string {
  const key = idKey(id);
  return key.length > 80 ? `${key.slice(0, 80)}…` : key;
}
