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

/**
 * An attempt the agent itself made inside one turn and saw fail, observed live in its logs
 * or session records while the turn ran (not turnguard's own `--retries`). The proxy and
 * `run` turn each into this fact; the journal records it (`agent_attempt`), `wait` and `log`
 * show it as progress, telemetry adds a span event, and `--fail-fast` ends a turn whose agent
 * retries a cause that retrying cannot cure.
 */
export const AgentAttemptSchema = once(() =>
  v.object({
    /** 1 for the first failed attempt observed in this turn, then 2, 3, … */
    n: v.pipe(v.number(), v.integer(), v.minValue(1)),
    /** ISO time turnguard observed it. */
    at: v.string(),
    /** The readable cause, as the evidence says it. */
    cause: v.string(),
    category: CategorySchema,
    /** The provider's or agent's code, when the evidence names one. */
    code: v.optional(v.union([v.number(), v.string()])),
    /** Whether retrying this cause can succeed (the vocabulary's verdict for the category). */
    retryable: v.boolean(),
    /**
     * The wait before the agent's next attempt, in milliseconds: the one it announced (Claude
     * Code's `retryInMs`), else the one the evidence's words name.
     */
    nextInMs: v.optional(v.pipe(v.number(), v.minValue(0))),
    /** The agent's own number for the attempt (Claude Code's `retryAttempt`), when it gave one. */
    agentN: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
    /**
     * When the provider said a retry may work (a spent quota's reset), in milliseconds from
     * the attempt: 0 when that time had already come and the attempt still failed.
     */
    retryAfterMs: v.optional(v.pipe(v.number(), v.minValue(0))),
    /** Where it was seen: the agent's `log` or its session `records`, and the file. */
    source: v.object({ kind: v.picklist(["log", "records"]), path: v.string() }),
  })
);
/** One observed attempt of the agent (derived from AgentAttemptSchema). */
export type AgentAttempt = v.InferOutput<ReturnType<typeof AgentAttemptSchema>>;

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
      /**
       * The final answer the agent recorded in its session records that the client did not
       * receive (none of it, or only its beginning), at most its first 64 KiB; absent
       * otherwise. `turnguard proxy --recover-replies` delivers it (docs/PROXY.md).
       */
      recovered: v.optional(v.string()),
    }),
    publish: v.nullable(PublishSchema()),
    /** The agent's own failed attempts observed while the turn ran; absent when none. */
    agentAttempts: v.optional(v.array(AgentAttemptSchema())),
    /**
     * turnguard ended the turn before the agent did (`--fail-fast`: the agent kept retrying
     * a cause that cannot succeed by retrying); `reason` says why. Absent otherwise.
     */
    endedEarly: v.optional(v.object({ reason: v.string() })),
    /**
     * Set on a revision of a turn's Outcome (1 for the first): the session records showed
     * the turn's end only after `records_wait_ms`, and read differently (proxy). The outcome
     * file gets it as another line with the same `session` and `turn`; absent on the first.
     */
    revision: v.optional(v.number()),
    diagnostics: v.array(v.string()),
  })
);
/** One turn's Outcome (v1). */
export type Outcome = v.InferOutput<ReturnType<typeof OutcomeSchema>>;
