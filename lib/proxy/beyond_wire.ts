/**
 * Evidence beyond the wire for a turn the agent ended as whole (`end_turn`): the agent's
 * session records (read by the profile's record readers) and the wire's contradictions,
 * gathered into the facts `decide` takes, plus the reply text that is the final answer
 * when the turn recovered or re-streamed its reply. Pure given the records already read.
 */
import { retryHint } from "../core/retry_hint.ts";
import type { Cause } from "../core/decide.ts";
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

/** What the evidence beyond the wire adds to a turn's facts and Outcome. */
export interface BeyondWire {
  cut: Cause | null;
  recordedStop: { stopReason: "max_tokens" | "refusal"; cause: Cause } | null;
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

/** Gathers the evidence; diagnostics say what was read and what it showed. */
export function gatherBeyondWire(input: BeyondWireInput, diagnostics: string[]): BeyondWire {
  const { turn, stopReason } = input;
  const out: BeyondWire = { cut: null, recordedStop: null, finalText: null };
  const text = turnText(turn);
  const whole = wholeText(turn, text);
  let recordedFinal = false;
  let recordedText: string | null = null;
  let retried = false;
  if (input.records) {
    diagnostics.push(...input.records.diagnostics);
    const events = readRecordEvents(input.records.records, input.readers, diagnostics);
    let verdict = foldRecordEvents(events);
    if (verdict.unanswered && turn.chars === 0) {
      // Nothing streamed and nothing recorded: the turn reads as empty, as the wire says.
      diagnostics.push("the agent recorded the prompt but no final answer, and streamed no text");
      verdict = { ...verdict, unanswered: null };
    }
    const causes = recordCauses(verdict, input.classifier, input.now, diagnostics);
    out.cut = causes.cut;
    out.recordedStop = causes.stop;
    recordedFinal = verdict.finalText !== null && !causes.cut && !causes.stop;
    recordedText = recordedFinal ? verdict.finalText : null;
    retried = verdict.recovered;
    if (verdict.recovered) {
      diagnostics.push(
        "the agent's records show an error the turn recovered from: a retry completed the answer",
      );
    }
  }
  // A recovered turn whose recorded final answer ends the streamed text: that is the reply.
  if (retried && recordedText && whole && text !== recordedText && text.endsWith(recordedText)) {
    out.finalText = recordedText;
    return out;
  }
  // Attempts: delimited by a silent gap before text that begins the attempt again; for a
  // turn known to be broken (cut, or retried by the agent), by its first characters alone.
  const attempts = whole
    ? restartedAttempts(text, turn.textBreaks) ??
      (out.cut || retried ? repeatedStarts(text) : null)
    : null;
  const last = attempts ? text.slice(attempts[attempts.length - 1]) : text;
  if (attempts) {
    out.finalText = last;
    diagnostics.push(
      `the reply restarted ${attempts.length - 1} time(s) (a retry re-streamed it): ` +
        `reply.text is the last attempt, from character ${
          attempts[attempts.length - 1]
        } of ${turn.chars}`,
    );
  }
  if (!out.cut && !out.recordedStop) {
    const words = zeroOutputUsage(input.result, turn.chars) ??
      emptyFinalMessage(stopReason, turn.lastMessage);
    if (words && recordedFinal) {
      diagnostics.push(`${words} — but the agent's records hold its final answer`);
    } else if (words) out.cut = contradictionCause(words);
    const shortfall = recordedText !== null && whole
      ? shorterThanRecorded(last, recordedText)
      : null;
    if (shortfall && !out.cut) out.cut = contradictionCause(shortfall);
    const dropped = recordedFinal ? null : droppedAnswer(input.result, turn.chars, turn.activity);
    if (dropped) {
      diagnostics.push(dropped);
      out.recordedStop = { stopReason: "refusal", cause: contradictionCause(dropped) };
    }
  }
  return out;
}
