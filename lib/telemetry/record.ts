/**
 * What one turn's Outcome becomes in OpenTelemetry terms: the span's name, times, status
 * and attributes, and the log record's severity and body. Pure, so the attribute table in
 * docs/TELEMETRY.md is tested without a collector. Attribute names follow the GenAI
 * semantic conventions where they fit (`gen_ai.*`, `error.type`), `turnguard.*` otherwise.
 * The `gen_ai.*` names are written out: the JS package marks its constants deprecated
 * since they moved to the GenAI conventions' own repository.
 */
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import type { Outcome } from "../core/outcome.ts";
import { redact } from "../text/redact.ts";

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
  /** `gen_ai.provider.name` of the agent profile, when known. */
  provider: string | null;
  /** `[telemetry] include_reply`. */
  includeReply: boolean;
}

/** One turn, ready for a span and a log record. */
export interface TurnRecord {
  spanName: string;
  startMs: number;
  endMs: number;
  /** The turn failed: the span's status is ERROR, with this description. */
  error: string | null;
  attributes: Record<string, AttributeValue>;
  severity: "INFO" | "WARN" | "ERROR";
  /** The log record's body: the Outcome, redacted, without reply text unless asked. */
  body: Record<string, unknown>;
}

/** The one place exported text passes the secret redaction. */
function redactText(text: string): string {
  return redact(text);
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

/** The span and log record of one turn. */
export function turnRecord(outcome: Outcome, ctx: TurnContext): TurnRecord {
  const a: Record<string, AttributeValue> = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": outcome.agent,
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
  if (ctx.provider) {
    a["gen_ai.provider.name"] = ctx.provider;
    a["gen_ai.system"] = ctx.provider;
  }
  const conversation = outcome.session ?? ctx.conversationId;
  if (conversation) a["gen_ai.conversation.id"] = conversation;
  if (outcome.stopReason !== null) {
    a["gen_ai.response.finish_reasons"] = [outcome.stopReason];
    a["turnguard.stop_reason"] = outcome.stopReason;
  }
  if (outcome.exit?.code != null) a["turnguard.exit.code"] = outcome.exit.code;
  if (outcome.exit?.signal != null) a["turnguard.exit.signal"] = outcome.exit.signal;
  const { error, retry, publish } = outcome;
  if (error) {
    a[ATTR_ERROR_TYPE] = error.category;
    a["turnguard.category"] = error.category;
    a["turnguard.error.message"] = redactText(error.message);
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
  const replyText = ctx.includeReply && outcome.reply.text !== undefined
    ? redactText(outcome.reply.text)
    : undefined;
  if (replyText !== undefined) a["turnguard.reply.text"] = replyText;
  return {
    spanName: `invoke_agent ${outcome.agent}`,
    startMs: Date.parse(outcome.startedAt),
    endMs: Date.parse(outcome.endedAt),
    error: outcome.status === "failed"
      ? (error ? `${error.category}: ${redactText(error.message)}` : "failed")
      : null,
    attributes: a,
    severity: outcome.status === "failed"
      ? "ERROR"
      : outcome.status === "ok" || outcome.status === "cancelled"
      ? "INFO"
      : "WARN",
    body: exportedOutcome(outcome, replyText),
  };
}

/** The Outcome as exported: texts redacted, the reply text only when asked for. */
function exportedOutcome(outcome: Outcome, replyText: string | undefined): Record<string, unknown> {
  const { text: _dropped, ...reply } = outcome.reply;
  return {
    ...outcome,
    error: outcome.error && { ...outcome.error, message: redactText(outcome.error.message) },
    reply: replyText === undefined ? reply : { ...reply, text: replyText },
    publish: outcome.publish && {
      ...outcome.publish,
      fallback: outcome.publish.fallback && {
        ...outcome.publish.fallback,
        ...(outcome.publish.fallback.stderr !== undefined
          ? { stderr: redactText(outcome.publish.fallback.stderr) }
          : {}),
      },
    },
    diagnostics: outcome.diagnostics.map(redactText),
  };
}
