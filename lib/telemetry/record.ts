/**
 * What a turn becomes in OpenTelemetry terms, per the GenAI agent-span conventions
 * (https://github.com/open-telemetry/semantic-conventions-genai, docs/gen-ai/gen-ai-agent-spans.md,
 * "Invoke agent client span"): one `invoke_agent AGENT` span per turn, whose status is the
 * turn's final one, with one child span per attempt (a retried turn has several); and one
 * log record per turn. Pure, so the attribute table in docs/TELEMETRY.md is tested without
 * a collector. Attribute names follow the conventions where they fit (`gen_ai.*`,
 * `error.type`), `turnguard.*` otherwise. The `gen_ai.*` names are written out: the JS
 * package marks its constants deprecated since they moved to the GenAI conventions' own
 * repository. Nothing here redacts: every exported string passes the sink
 * (lib/telemetry/sink.ts) on its way out.
 */
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import type { Outcome } from "../core/outcome.ts";

/** An attribute value as OTLP carries it. */
export type AttributeValue = string | number | boolean | string[];

/** What the exporter is told about a turn besides its Outcome. */
export interface TurnContext {
  /** The session the turn belongs to (`run`: the journal's session of one turn). */
  conversationId: string | null;
  /** 0 for the first attempt, n for the n-th retry of the same turn. */
  attempt: number;
  /** The journal name of the session (`--name`, else the agent profile). */
  name: string;
  /** `gen_ai.provider.name`: the profile's provider, else UNKNOWN_PROVIDER. */
  provider: string;
  /** `[telemetry] include_reply`. */
  includeReply: boolean;
}

/**
 * `gen_ai.provider.name` when the agent's provider is not known (a profile that is not
 * built in and has no `[telemetry] providers` entry). The attribute is required on an
 * `invoke_agent` span and a custom value is allowed; `_OTHER` is the conventions' spelling
 * of "none of the listed values" (as in `error.type`).
 */
export const UNKNOWN_PROVIDER = "_OTHER";

/** One attempt, ready for its span (a child of the turn's span). */
export interface AttemptRecord {
  spanName: string;
  startMs: number;
  endMs: number;
  /** The attempt failed: the span's status is ERROR, with this description. */
  error: string | null;
  attributes: Record<string, AttributeValue>;
}

/**
 * The name of the event of one attempt the agent itself made and saw fail inside a turn
 * (Outcome.agentAttempts). Events are named by the semantic conventions for events
 * (https://github.com/open-telemetry/semantic-conventions, docs/general/events.md: a name
 * that identifies the event's structure, following the naming guidelines — a namespace of
 * our own, lower-case, dot-separated), with attributes and no body. Not an `exception`
 * event: nothing was raised in turnguard; the agent reported a failed request.
 */
export const AGENT_ATTEMPT_EVENT = "turnguard.agent_attempt";

/**
 * At most this many agent attempts of one Outcome are exported (the latest ones): the SDK's
 * default limit of events on one span. (A turn keeps fewer: lib/cause/agent_attempts.ts.)
 */
export const AGENT_ATTEMPT_EVENTS = 128;

/** One agent attempt, ready for its span event and its log-based event. */
export interface AgentAttemptEvent {
  name: string;
  /** When turnguard observed the attempt (its `at`). */
  timeMs: number;
  attributes: Record<string, AttributeValue>;
}

/**
 * The events of the agent's own failed attempts in an Outcome, oldest first: the latest
 * AGENT_ATTEMPT_EVENTS at most, each at the time it was observed.
 */
export function agentAttemptEvents(outcome: Outcome): AgentAttemptEvent[] {
  const attempts = outcome.agentAttempts ?? [];
  return attempts.slice(Math.max(0, attempts.length - AGENT_ATTEMPT_EVENTS)).map((a) => {
    const at = Date.parse(a.at);
    const attributes: Record<string, AttributeValue> = {
      [ATTR_ERROR_TYPE]: a.category,
      "turnguard.agent_attempt.number": a.n,
      "turnguard.agent_attempt.cause": a.cause,
      "turnguard.agent_attempt.retryable": a.retryable,
      "turnguard.agent_attempt.source": a.source.kind,
    };
    if (a.code !== undefined) attributes["turnguard.agent_attempt.code"] = String(a.code);
    if (a.nextInMs !== undefined) attributes["turnguard.agent_attempt.next_in_ms"] = a.nextInMs;
    return {
      name: AGENT_ATTEMPT_EVENT,
      timeMs: Number.isNaN(at) ? Date.parse(outcome.endedAt) : at,
      attributes,
    };
  });
}

/** One turn, ready for its span and its log record. */
export interface TurnRecord extends AttemptRecord {
  severity: "INFO" | "WARN" | "ERROR";
  /** The log record's body: the final Outcome, without reply text unless asked. */
  body: Record<string, unknown>;
}

/**
 * A failed turn the agent itself reported as fine: it said `end_turn` (proxy) or exited 0
 * (run), and turnguard found the failure elsewhere.
 */
export function swallowed(outcome: Outcome): boolean {
  if (outcome.status !== "failed") return false;
  if (outcome.stopReason !== null) return outcome.stopReason === "end_turn";
  return outcome.exit?.code === 0 && outcome.exit.signal === null;
}

/**
 * The attributes a turn's span has from its start (the conventions ask for these at span
 * creation, for sampling): operation, agent, provider, conversation.
 */
export function turnStartAttributes(
  agent: string,
  ctx: Pick<TurnContext, "provider" | "conversationId">,
): Record<string, AttributeValue> {
  const a: Record<string, AttributeValue> = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": agent,
    "gen_ai.provider.name": ctx.provider,
  };
  // The attribute's older name, for older dashboards; only for a known provider.
  if (ctx.provider !== UNKNOWN_PROVIDER) a["gen_ai.system"] = ctx.provider;
  if (ctx.conversationId) a["gen_ai.conversation.id"] = ctx.conversationId;
  return a;
}

/** The span of one attempt: the attempt's Outcome, without `gen_ai.operation.name`. */
export function attemptRecord(outcome: Outcome, ctx: TurnContext): AttemptRecord {
  const { "gen_ai.operation.name": _turnOnly, ...attributes } = outcomeAttributes(outcome, ctx);
  return {
    spanName: `attempt ${outcome.agent}`,
    startMs: Date.parse(outcome.startedAt),
    endMs: Date.parse(outcome.endedAt),
    error: failure(outcome),
    attributes,
  };
}

/**
 * The span and log record of a whole turn: its final Outcome (the last attempt's), from
 * the first attempt's start; `attempts` is how many ran.
 */
export function turnRecord(
  outcome: Outcome,
  ctx: TurnContext,
  turn: { startMs: number; attempts: number },
): TurnRecord {
  const replyText = ctx.includeReply ? outcome.reply.text : undefined;
  return {
    spanName: `invoke_agent ${outcome.agent}`,
    startMs: Math.min(turn.startMs, Date.parse(outcome.startedAt)),
    endMs: Date.parse(outcome.endedAt),
    error: failure(outcome),
    attributes: { ...outcomeAttributes(outcome, ctx), "turnguard.attempts": turn.attempts },
    severity: outcome.status === "failed"
      ? "ERROR"
      : outcome.status === "ok" || outcome.status === "cancelled"
      ? "INFO"
      : "WARN",
    body: exportedOutcome(outcome, replyText),
  };
}

/** The span status description of a failed turn or attempt; null when it did not fail. */
function failure(outcome: Outcome): string | null {
  if (outcome.status !== "failed") return null;
  return outcome.error ? `${outcome.error.category}: ${outcome.error.message}` : "failed";
}

/** The attributes of one attempt's Outcome (a turn's span adds `turnguard.attempts`). */
function outcomeAttributes(outcome: Outcome, ctx: TurnContext): Record<string, AttributeValue> {
  const conversation = outcome.session ?? ctx.conversationId;
  const a: Record<string, AttributeValue> = {
    ...turnStartAttributes(outcome.agent, { ...ctx, conversationId: conversation }),
    "turnguard.mode": outcome.mode,
    "turnguard.agent": outcome.agent,
    "turnguard.name": ctx.name,
    "turnguard.turn": outcome.turn,
    "turnguard.attempt": ctx.attempt,
    "turnguard.status": outcome.status,
    "turnguard.swallowed": swallowed(outcome),
    "turnguard.duration_ms": outcome.durationMs,
    "turnguard.reply.chars": outcome.reply.chars,
  };
  if (outcome.stopReason !== null) {
    a["gen_ai.response.finish_reasons"] = [outcome.stopReason];
    a["turnguard.stop_reason"] = outcome.stopReason;
  }
  if (outcome.exit?.code != null) a["turnguard.exit.code"] = outcome.exit.code;
  if (outcome.exit?.signal != null) a["turnguard.exit.signal"] = outcome.exit.signal;
  // How many the agent made: the latest attempt's number (the Outcome keeps only some).
  const lastAttempt = outcome.agentAttempts?.at(-1);
  if (lastAttempt) a["turnguard.agent_attempts"] = lastAttempt.n;
  const { error, retry, publish } = outcome;
  if (error) {
    a[ATTR_ERROR_TYPE] = error.category;
    a["turnguard.category"] = error.category;
    a["turnguard.error.message"] = error.message;
    if (error.code !== null) a["turnguard.error.code"] = String(error.code);
    if (error.anchor !== null) a["turnguard.anchor"] = error.anchor;
  }
  if (retry) {
    a["turnguard.retryable"] = retry.retryable;
    if (retry.afterMs !== null) a["turnguard.retry.after_ms"] = retry.afterMs;
  }
  if (publish) {
    a["turnguard.publish.armed"] = publish.armed;
    a["turnguard.publish.detected"] = publish.detected;
    if (publish.detector !== null) a["turnguard.publish.detector"] = publish.detector;
    if (publish.fallback) {
      a["turnguard.publish.fallback.sent"] = publish.fallback.sent;
      if (publish.fallback.exitCode !== null) {
        a["turnguard.publish.fallback.exit_code"] = publish.fallback.exitCode;
      }
    }
  }
  if (ctx.includeReply && outcome.reply.text !== undefined) {
    a["turnguard.reply.text"] = outcome.reply.text;
  }
  return a;
}

/** The Outcome as exported: the reply text only when asked for. */
function exportedOutcome(outcome: Outcome, replyText: string | undefined): Record<string, unknown> {
  const { text: _dropped, ...reply } = outcome.reply;
  return { ...outcome, reply: replyText === undefined ? reply : { ...reply, text: replyText } };
}
