/**
 * Evidence beyond the wire for a turn the agent ended as whole (`end_turn`): the agent's
 * session records (read by the profile's record readers) and the wire's contradictions,
 * gathered into the facts `decide` takes, plus the reply text that is the final answer
 * when the turn recovered or re-streamed its reply. Pure given the records already read.
 */
import { retryHint } from "../core/retry_hint.ts";
import type { BeyondWireFacts, Cause } from "../core/decide.ts";
import type { LoadedRecordReader } from "../plugin/api.ts";
import type { Classifier } from "../cause/classifier.ts";
import { foldRecordEvents, readRecordEvents, recordCauses } from "../cause/record_evidence.ts";
import type { RecordsRead } from "../cause/session_records.ts";
import {
  droppedAnswer,
  emptyFinalMessage,
  repeatedStarts,
  restartedAttempts,
  shorterThanRecorded,
  zeroOutputUsage,
} from "../cause/contradictions.ts";
import { type Turn, turnText, wholeText } from "./turns.ts";

/**
 * The evidence beyond the wire, as facts for `decide` (which weighs them), and the reply
 * text that is the final answer when it is not all of the streamed text.
 */
export interface BeyondWire {
  facts: Required<BeyondWireFacts>;
  /** The final answer when it is not all of the streamed text; null: the streamed text. */
  finalText: string | null;
}

/** Everything the gathering needs. */
export interface BeyondWireInput {
  turn: Turn;
  /** The prompt's result object (for its `usage`). */
  result: unknown;
  stopReason: string | null;
  /** The turn's records, read after the settle window; null: the profile names none. */
  records: RecordsRead | null;
  readers: readonly LoadedRecordReader[];
  /** The profile's classifier. */
  classifier: Classifier;
  now: number;
}

/** A wire contradiction as a cause: its words, category unknown (the wire tells no more). */
export function contradictionCause(message: string): Cause {
  return {
    error: { code: null, message, category: "unknown", anchor: "wire", source: null },
    retry: retryHint("unknown"),
  };
}

/** Gathers the evidence; diagnostics say what was read. */
export function gatherBeyondWire(input: BeyondWireInput, diagnostics: string[]): BeyondWire {
  const { turn, stopReason } = input;
  const facts: Required<BeyondWireFacts> = {
    cut: null,
    unanswered: null,
    recordedStop: null,
    recordedFinal: false,
    contradiction: null,
    shortfall: null,
    dropped: null,
  };
  const text = turnText(turn);
  const whole = wholeText(turn, text);
  let recordedText: string | null = null;
  let retried = false;
  if (input.records) {
    diagnostics.push(...input.records.diagnostics);
    const events = readRecordEvents(input.records.records, input.readers, diagnostics);
    const verdict = foldRecordEvents(events);
    const causes = recordCauses(verdict, input.classifier, input.now, diagnostics);
    // The records' cut is an unanswered prompt only when they show nothing else.
    if (verdict.unanswered) facts.unanswered = causes.cut;
    else facts.cut = causes.cut;
    facts.recordedStop = causes.stop;
    facts.recordedFinal = verdict.finalText !== null && !causes.cut && !causes.stop;
    recordedText = facts.recordedFinal ? verdict.finalText : null;
    retried = verdict.recovered;
    if (verdict.recovered) {
      diagnostics.push(
        "the agent's records show an error the turn recovered from: a retry completed the answer",
      );
    }
  }
  // A recovered turn whose recorded final answer ends the streamed text: that is the reply.
  if (retried && recordedText && whole && text !== recordedText && text.endsWith(recordedText)) {
    return { facts, finalText: recordedText };
  }
  // Attempts: delimited by a silent gap before text that begins the attempt again; for a
  // turn known to be broken (cut, or retried by the agent), by its first characters alone.
  const broken = facts.cut !== null || facts.unanswered !== null || retried;
  const attempts = whole
    ? restartedAttempts(text, turn.textBreaks) ?? (broken ? repeatedStarts(text) : null)
    : null;
  const last = attempts ? text.slice(attempts[attempts.length - 1]) : text;
  if (attempts) {
    diagnostics.push(
      `the reply restarted ${attempts.length - 1} time(s) (a retry re-streamed it): ` +
        `reply.text is the last attempt, from character ${
          attempts[attempts.length - 1]
        } of ${turn.chars}`,
    );
  }
  const words = zeroOutputUsage(input.result, turn.chars) ??
    emptyFinalMessage(stopReason, turn.lastMessage);
  if (words) facts.contradiction = contradictionCause(words);
  const shortfall = recordedText !== null && whole ? shorterThanRecorded(last, recordedText) : null;
  if (shortfall) facts.shortfall = contradictionCause(shortfall);
  const dropped = droppedAnswer(input.result, turn.chars, turn.activity);
  if (dropped) facts.dropped = contradictionCause(dropped);
  return { facts, finalText: attempts ? last : null };
}
