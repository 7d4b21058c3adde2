/**
 * The end of a proxied turn, in one straight line: conclude → publish → retry decision →
 * record → send or hold. Each step is a plain call that returns data; `endTurn` returns the
 * Outcome and what the client is sent. The journal has the retry decision and the
 * attempt's end before the response leaves (the caller sends it after `endTurn` returns).
 */
import { errorText } from "../errors.ts";
import type { Outcome } from "../core/outcome.ts";
import { encodeResponse } from "../acp/jsonrpc.ts";
import { lineEnding } from "../acp/lines.ts";
import { withPluginBudget } from "../plugin/budget.ts";
import { type PublishContext, settlePublish } from "../publish/engine.ts";
import type { RetryDecision, ScheduledRetry } from "../retry/policy.ts";
import type { TurnRecorder } from "../retry/turn_recorder.ts";
import { type ConcludeInput, concludeTurn, type Conclusion } from "./conclude.ts";
import { reachedClient, type Turn, turnText } from "./turns.ts";

/**
 * What a proxy does with each ended turn besides answering it, set once by the CLI: the
 * publish fallback, the journal (with its retry policy, and telemetry), the outcome file.
 */
export interface TurnEndSteps {
  /** The publish fallback; null (or `settings: null`) when it is not armed. */
  publish?: PublishContext | null;
  /** Journals (and exports) each turn and decides its retries; null: neither. */
  recorder?: TurnRecorder | null;
  /** Receives each turn's final Outcome (an attempt that is retried is not final). */
  onOutcome?: (outcome: Outcome) => void;
  /** Receives a revision of a turn's Outcome (its `revision` set), after `onOutcome`'s. */
  onRevised?: (outcome: Outcome) => void;
}

/** Whether the publish step runs (and so whether turns merge their tool calls). */
export function publishArmed(steps: TurnEndSteps): boolean {
  return (steps.publish?.settings ?? null) !== null;
}

/**
 * Where a failed turn's response waits while its retry does (the proxy's RetryQueue): it
 * takes the retry, or says why it cannot wait (the agent exited, the client left).
 */
export interface RetryHold {
  /**
   * Keeps `response` until the retry runs or is stopped; null: held, else why not (`sent`:
   * the agent's response already went to the client).
   */
  hold(
    turn: Turn,
    decision: ScheduledRetry,
    response: Uint8Array | null,
    sent: boolean,
  ): string | null;
}

/** One turn's end, as data. */
export interface TurnEndInput {
  /** What `concludeTurn` reads: the turn, how it ended, the profile's classifier, ... */
  conclude: ConcludeInput;
  /** The agent's response line; null when turnguard answers (silence, the agent died). */
  line: Uint8Array | null;
  /**
   * Set when the agent's response already went to the client unread (too long or nested
   * too deeply): why. It is then neither rewritten, published nor held.
   */
  unread?: string;
}

/** What the turn's end came to. */
export interface TurnEndResult {
  /** The Outcome recorded (journal, telemetry; the outcome file unless held). */
  outcome: Outcome;
  /** The retry decision journaled with it. */
  retry: RetryDecision;
  /** The bytes to send the client now; null: nothing (held, or already sent unread). */
  send: Uint8Array | null;
  /** The response waits for a retry (the RetryHold took it). */
  held: boolean;
  /** The whole recovered answer (Conclusion.recoveredText), when there is one. */
  recoveredText?: string | null;
}

const NO_RETRY: RetryDecision = { kind: "none" };

/** Ends one turn: conclude → publish → retry decision → record → send or hold. */
export async function endTurn(
  input: TurnEndInput,
  steps: TurnEndSteps,
  retries: RetryHold,
  log: (line: string) => void = () => {},
): Promise<TurnEndResult> {
  const { turn } = input.conclude;
  // 1. Conclude: the Outcome, and the response turnguard sends instead of the agent's.
  const conclusion = withPluginBudget(() => concludeTurn(input.conclude));
  const response = input.unread === undefined ? responseBytes(conclusion, input) : null;
  // 2. Publish (the response waits for it), unless the response already went.
  const outcome = input.unread === undefined
    ? await publish(steps.publish ?? null, turn, conclusion.outcome)
    : withDiagnostic(conclusion.outcome, input.unread);
  // 3. The retry decision (the recorder's policy).
  const retry = steps.recorder?.decide(turn.attempt, outcome, reachedClient(turn)) ?? NO_RETRY;
  // 4. Record: the decision and the attempt's end in the journal (and telemetry).
  logOutcome(outcome, log);
  const key = { session: turn.sessionId, turn: turn.turn };
  guarded(log, () => steps.recorder?.recordEnd(key, turn.attempt, outcome, retry));
  // 5. Send or hold: a retry that can wait holds the response; else the client gets it.
  if (retry.kind === "retry") {
    const cannot = retries.hold(turn, retry, response, input.unread !== undefined);
    if (cannot === null) return { outcome, retry, send: null, held: true };
    const reason = `retry ${retry.attempt} of ${retry.of} was stopped before it ran (${cannot})`;
    guarded(log, () => steps.recorder?.stopped(key, turn.attempt, reason));
  }
  // An attempt that will be retried is not the turn's Outcome (as in run mode, only the
  // last attempt's is); the journal has every attempt.
  guarded(log, () => steps.onOutcome?.(outcome));
  return { outcome, retry, send: response, held: false, recoveredText: conclusion.recoveredText };
}

/** The bytes the client is answered with: turnguard's response, else the agent's line. */
function responseBytes(conclusion: Conclusion, input: TurnEndInput): Uint8Array | null {
  const { turn } = input.conclude;
  if (!conclusion.response) return input.line;
  const ending = input.line ? lineEnding(input.line) : "\n";
  return encodeResponse(conclusion.response, turn.requestIdLexeme, ending);
}

/** Settles the turn's publish (when armed) into its Outcome; a failure is a diagnostic. */
async function publish(
  ctx: PublishContext | null,
  turn: Turn,
  outcome: Outcome,
): Promise<Outcome> {
  if (ctx === null || ctx.settings === null) return outcome;
  try {
    const { publish, diagnostics, unpublished } = await settlePublish(ctx, {
      sessionId: turn.sessionId,
      stopReason: outcome.status === "cancelled" ? "cancelled" : outcome.stopReason,
      // A reply cut short is no answer to publish, whatever stopReason the agent gave
      // (docs/EVIDENCE.md); a re-streamed one publishes its last attempt (reply.text).
      failed: outcome.status === "failed" || outcome.status === "truncated",
      text: outcome.reply.text ?? turnText(turn),
      toolCalls: turn.toolCalls.values(),
      promptMeta: turn.promptMeta,
    });
    if (unpublished) ctx.warn?.(`turnguard: ${unpublished}`);
    return { ...outcome, publish, diagnostics: [...outcome.diagnostics, ...diagnostics] };
  } catch (err) {
    return withDiagnostic(outcome, `settling the publish failed: ${errorText(err)}`);
  }
}

function withDiagnostic(outcome: Outcome, line: string): Outcome {
  return { ...outcome, diagnostics: [...outcome.diagnostics, line] };
}

/** `--verbose`: the turn's status and diagnostics, one line each. */
function logOutcome(outcome: Outcome, log: (line: string) => void): void {
  const error = outcome.error ? ` (${outcome.error.category}): ${outcome.error.message}` : "";
  log(`session ${outcome.session} turn ${outcome.turn}: ${outcome.status}${error}`);
  for (const d of outcome.diagnostics) log(`  ${d}`);
}

/** A recording step that throws costs no turn: it is said, and the turn goes on. */
function guarded(log: (line: string) => void, step: () => void): void {
  try {
    step();
  } catch (err) {
    log(`recording the outcome failed: ${errorText(err)}`);
  }
}
