/**
 * The agent's own attempts, read live: from the lines the profile's logs gained and the
 * records its session files gained since the last look, each failed attempt the agent made
 * (a log line an anchor finds a cause in, a record reader's `error` event) as an
 * AgentAttempt fact — its cause, category, whether retrying it can succeed, and the wait
 * the agent announced. Pure: the new bytes, the classifier, the readers and the clock are
 * passed in; following the files as they grow is lib/cause/attempt_follower.ts's.
 */
import { MAX_CAUSE_BYTES, tryMatch } from "./anchors.ts";
import { attributeLines, type LogLine } from "./attribution.ts";
import { classify } from "./classify.ts";
import type { Classifier } from "./classifier.ts";
import { codeIn } from "./log_cause.ts";
import { readRecordEvents } from "./record_evidence.ts";
import type { SessionRecord } from "./session_records.ts";
import type { AgentAttempt } from "../core/outcome.ts";
import type { AnchorHit, LoadedAnchor, LoadedRecordReader } from "../plugin/api.ts";
import { type PluginLedger, withPluginBudget } from "../plugin/budget.ts";
import { capUtf8, formatDuration } from "../text/text.ts";

/** What the agent's evidence gained since the last look: whole lines and records only. */
export interface NewEvidence {
  /** New log lines, oldest first. */
  lines: readonly LogLine[];
  /** New session records, oldest first. */
  records: readonly SessionRecord[];
}

/** How new evidence is read. */
export interface AttemptContext {
  classifier: Classifier;
  readers: readonly LoadedRecordReader[];
  /** The profile's log format: `glog` lines of other pids are not this agent's. */
  logFormat: "plain" | "glog";
  /** The agent's pid (glog attribution); null when unknown. */
  pid: number | null;
  /** Attempts observed before these in the same turn (the next one is `seen + 1`). */
  seen: number;
  now: number;
  /** The turn's plugin budget (every look of one turn is charged to it). */
  plugins?: PluginLedger;
}

/**
 * The failed attempts in `evidence`, log lines first then records, numbered from
 * `ctx.seen + 1`. A plugin that throws or answers badly is a diagnostic, never an attempt.
 */
export function attemptsIn(
  evidence: NewEvidence,
  ctx: AttemptContext,
  diagnostics: string[] = [],
): AgentAttempt[] {
  return withPluginBudget(() => {
    const found: Omit<AgentAttempt, "n">[] = [];
    const anchors = attemptAnchors(ctx.classifier);
    for (const line of ownLines(evidence.lines, ctx)) {
      const input = { kind: "log" as const, line: line.text };
      let hit: AnchorHit | null = null;
      for (const anchor of anchors) if ((hit = tryMatch(anchor, input, diagnostics))) break;
      if (!hit) continue;
      found.push(
        attempt(hit, hit.code ?? codeIn(hit.cause), { kind: "log", path: line.path }, ctx),
      );
    }
    for (const e of readRecordEvents(evidence.records, ctx.readers, diagnostics)) {
      if (e.event.kind !== "error") continue;
      const { cause, category, code, retryAfterMs, retryAt, nextAttemptInMs, attempt: n } = e.event;
      const retry = retryAfterMs !== undefined || retryAt !== undefined
        ? {
          ...(retryAfterMs !== undefined ? { afterMs: retryAfterMs } : {}),
          ...(retryAt !== undefined ? { at: retryAt } : {}),
        }
        : undefined;
      const hit: AnchorHit = { cause, category, code, ...(retry ? { retry } : {}) };
      const announced = {
        ...(nextAttemptInMs !== undefined ? { nextInMs: nextAttemptInMs } : {}),
        ...(n !== undefined ? { agentN: n } : {}),
      };
      found.push(attempt(hit, code ?? null, { kind: "records", path: e.path }, ctx, announced));
    }
    return found.map((a, i) => ({ n: ctx.seen + i + 1, ...a }));
  }, ctx.plugins);
}

/**
 * The log anchors that tell an attempt, in the matcher's order: the profile's own (those a
 * pack wrote for its agent, `agents` set) when it has any — the catch-all anchors match
 * every error line, also the side requests a pack declines on purpose (opencode's title
 * generator) — else every log anchor of the profile.
 */
function attemptAnchors(classifier: Classifier): readonly LoadedAnchor[] {
  const all = classifier.candidates(["log"]);
  const own = all.filter((a) => a.agents !== undefined);
  return own.length > 0 ? own : all;
}

/**
 * The lines of this agent: with glog headers, those of its pid (lib/cause/attribution.ts).
 * Attribution reads the lines together (a continuation line is its header's; lines of no
 * other process are all kept): a caller that classifies in pieces attributes the whole first.
 */
export function ownLines(
  lines: readonly LogLine[],
  ctx: Pick<AttemptContext, "logFormat" | "pid">,
): readonly LogLine[] {
  if (ctx.logFormat !== "glog" || ctx.pid === null || lines.length === 0) return lines;
  return attributeLines(lines, ctx.pid).lines;
}

/**
 * One attempt from a hit: classified by the profile; the provider's retry time from the
 * evidence (`retryAfterMs`); the wait before the agent's next attempt the one it announced,
 * else, but for a quota, that retry time (a rate limit's "try again in 8s" is the wait an
 * agent keeps; a quota's reset is not: Claude Code retries a limit that resets in a day
 * after 0.5 s, tests/agents/corpus/claude-agent-acp/quota_daily_retried.jsonl).
 */
function attempt(
  hit: AnchorHit,
  code: number | string | null,
  source: AgentAttempt["source"],
  ctx: AttemptContext,
  announced: Pick<AgentAttempt, "nextInMs" | "agentN"> = {},
): Omit<AgentAttempt, "n"> {
  const { category, retry } = classify(hit.cause, hit, ctx.classifier, ctx.now);
  const nextInMs = announced.nextInMs ??
    (category !== "quota" ? retry.afterMs ?? undefined : undefined);
  return {
    at: new Date(ctx.now).toISOString(),
    cause: capUtf8(hit.cause, MAX_CAUSE_BYTES),
    category,
    ...(code !== null ? { code } : {}),
    retryable: retry.retryable,
    ...(nextInMs !== undefined ? { nextInMs } : {}),
    ...(announced.agentN !== undefined ? { agentN: announced.agentN } : {}),
    ...(retry.afterMs !== null ? { retryAfterMs: retry.afterMs } : {}),
    source,
  };
}

/**
 * Most attempts one turn keeps (its Outcome's `agentAttempts`): an agent that retries for
 * an hour makes thousands. The first and the newest are kept; `n` still counts them all.
 */
export const MAX_ATTEMPTS_KEPT = 100;

/** Adds `attempt` to a turn's list, dropping the oldest but the first past the bound. */
export function keepAttempt(list: AgentAttempt[], attempt: AgentAttempt): void {
  list.push(attempt);
  if (list.length > MAX_ATTEMPTS_KEPT) list.splice(1, 1);
}

/** Says how many attempts a list left out (their numbers are missing), or null. */
export function attemptsNote(list: readonly AgentAttempt[]): string | null {
  const last = list.at(-1);
  if (!last || last.n <= list.length) return null;
  return `the agent made ${last.n} failed attempts; agentAttempts keeps the first and the last ${
    list.length - 1
  }`;
}

/**
 * What the agent was doing, in a few words, for a message about a silent turn: `retrying
 * a 503 (capacity), attempt 14`; null when no attempt was observed.
 */
export function attemptsSummary(attempts: readonly AgentAttempt[]): string | null {
  const last = attempts.at(-1);
  if (!last) return null;
  const what = last.code !== undefined ? `a ${last.code} (${last.category})` : last.category;
  const next = last.nextInMs !== undefined ? `, next in ${formatDuration(last.nextInMs)}` : "";
  return `the agent was retrying ${what}, attempt ${last.n}${next}`;
}
