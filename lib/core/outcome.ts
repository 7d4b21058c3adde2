/**
 * The Outcome: one normalized JSON object per turn. Defined once here with valibot; the
 * TypeScript types and the JSON Schema printed by `turnguard schema` are derived from it.
 */
import * as v from "valibot";
import { once } from "../once.ts";

/** Why a turn failed, normalized across agents. */
export const CategorySchema = v.picklist([
  "quota",
  "rate_limit",
  "capacity",
  "auth",
  "model",
  "context",
  "network",
  "timeout",
  "crash",
  "unknown",
]);
/** One of the failure categories. */
export type Category = v.InferOutput<typeof CategorySchema>;

/** The true status of a turn. */
export const StatusSchema = v.picklist([
  "ok",
  "empty",
  "failed",
  "cancelled",
  "refused",
  "truncated",
]);
/** One of the turn statuses. */
export type Status = v.InferOutput<typeof StatusSchema>;

/** When (and whether) a failed turn can be tried again. */
export const RetryHintSchema = once(() =>
  v.object({
    retryable: v.boolean(),
    reason: v.string(),
    afterMs: v.nullable(v.number()),
    at: v.nullable(v.string()),
  })
);
/** A failure's retry hint. */
export type RetryHint = v.InferOutput<ReturnType<typeof RetryHintSchema>>;

/** Where in a log file a cause was found. */
export const SourceSchema = once(() => v.object({ path: v.string(), offset: v.number() }));
/** A cause's place in a log file. */
export type Source = v.InferOutput<ReturnType<typeof SourceSchema>>;

/** A turn's error: the readable cause, its category and the anchor that found it. */
export const TurnErrorSchema = once(() =>
  v.object({
    code: v.nullable(v.union([v.number(), v.string()])),
    message: v.string(),
    category: CategorySchema,
    anchor: v.nullable(v.string()),
    source: v.nullable(SourceSchema()),
  })
);
/** A turn's normalized error. */
export type TurnError = v.InferOutput<ReturnType<typeof TurnErrorSchema>>;

/** What became of the reply the agent was told to publish (proxy mode, when armed). */
export const PublishSchema = once(() =>
  v.object({
    armed: v.boolean(),
    detected: v.boolean(),
    detector: v.nullable(v.string()),
    channel: v.optional(v.nullable(v.string())),
    fallback: v.nullable(v.object({
      sent: v.boolean(),
      exitCode: v.nullable(v.number()),
      stderr: v.optional(v.string()),
    })),
  })
);
/** The Outcome's `publish` field. */
export type Publish = v.InferOutput<ReturnType<typeof PublishSchema>>;

/** The Outcome of one turn (v1). */
export const OutcomeSchema = once(() =>
  v.object({
    v: v.literal(1),
    mode: v.picklist(["run", "proxy"]),
    agent: v.string(),
    session: v.nullable(v.string()),
    turn: v.number(),
    startedAt: v.string(),
    endedAt: v.string(),
    durationMs: v.number(),
    status: StatusSchema,
    stopReason: v.nullable(v.string()),
    exit: v.nullable(v.object({ code: v.nullable(v.number()), signal: v.nullable(v.string()) })),
    error: v.nullable(TurnErrorSchema()),
    retry: v.nullable(RetryHintSchema()),
    reply: v.object({
      chars: v.number(),
      text: v.optional(v.string()),
      /** True when `text` holds only the first bytes of the reply (memory stays bounded). */
      capped: v.optional(v.boolean()),
    }),
    publish: v.nullable(PublishSchema()),
    diagnostics: v.array(v.string()),
  })
);
/** One turn's Outcome (v1). */
export type Outcome = v.InferOutput<ReturnType<typeof OutcomeSchema>>;
