/**
 * Evidence beyond the wire: the agent's session records (read by the profile's record
 * readers) and the wire's contradictions, gathered into the facts `decide` takes (which
 * weighs them, for a turn the agent ended as whole or with an error), plus the reply text
 * that is the final answer when the turn recovered or re-streamed its reply. Pure given the
 * records already read.
 */
import { buildCause } from "../core/cause.ts";
import {
  type BeyondWireFacts,
  type Cause,
  type RecordFacts,
  weighRecords,
} from "../core/decide.ts";
import type { LoadedRecordReader } from "../plugin/api.ts";
import type { Classifier } from "../cause/classifier.ts";
import {
  foldRecordEvents,
  readRecordEvents,
  recordFacts,
  type RecordVerdict,
} from "../cause/record_evidence.ts";
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
  /**
   * The final answer the records hold when the client did not receive it (`unsentReply`);
   * null otherwise.
   */
  unsentText: string | null;
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
  return buildCause({ message, category: "unknown", anchor: "wire" });
}

/** The turn's session records as facts for `decide`, and their verdict; null: none read. */
export function readRecords(
  input: Pick<BeyondWireInput, "records" | "readers" | "classifier" | "now">,
  diagnostics: string[],
): { facts: RecordFacts; verdict: RecordVerdict } | null {
  if (!input.records) return null;
  diagnostics.push(...input.records.diagnostics);
  const events = readRecordEvents(input.records.records, input.readers, diagnostics);
  const verdict = foldRecordEvents(events);
  return { facts: recordFacts(verdict, input.classifier, input.now, diagnostics), verdict };
}

/** Gathers the evidence; diagnostics say what was read. */
export function gatherBeyondWire(input: BeyondWireInput, diagnostics: string[]): BeyondWire {
  const { turn, stopReason } = input;
  const facts: Required<BeyondWireFacts> = {
    records: null,
    contradiction: null,
    shortfall: null,
    dropped: null,
    unsentReply: false,
  };
  const text = turnText(turn);
  const whole = wholeText(turn, text);
  /** The final answer the records hold, whatever else they say (decide weighs it). */
  let recorded: string | null = null;
  /** That answer when decide's reading of the records says it stands (the reply text). */
  let recordedText: string | null = null;
  let retried = false;
  let broken = false;
  const read = readRecords(input, diagnostics);
  if (read) {
    const { verdict } = read;
    facts.records = read.facts;
    // The reply text follows decide's own reading of the records.
    const reading = weighRecords(facts.records);
    recorded = verdict.finalText;
    recordedText = reading.final ? recorded : null;
    retried = verdict.recovered;
    broken = reading.cut !== null || reading.unanswered !== null;
    if (verdict.recovered) {
      diagnostics.push(
        "the agent's records show an error the turn recovered from: a retry completed the answer",
      );
    }
  }
  // A recovered turn whose recorded final answer ends the streamed text: that is the reply.
  if (retried && recordedText && whole && text !== recordedText && text.endsWith(recordedText)) {
    return { facts, finalText: recordedText, unsentText: null };
  }
  const unsentText = recordedText !== null && whole && unsent(text, recordedText)
    ? recordedText
    : null;
  facts.unsentReply = unsentText !== null;
  // Attempts: delimited by a silent gap before text that begins the attempt again; for a
  // turn known to be broken (cut, or retried by the agent), by its first characters alone.
  broken ||= retried;
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
  // A fact whenever the records hold a final answer: decide counts it only when that answer
  // stands (its `beyondWire` rows), else the wire's own contradictions.
  const shortfall = recorded !== null && whole ? shorterThanRecorded(last, recorded) : null;
  if (shortfall) facts.shortfall = contradictionCause(shortfall);
  const dropped = droppedAnswer(input.result, turn.chars, turn.activity);
  if (dropped) facts.dropped = contradictionCause(dropped);
  return { facts, finalText: attempts ? last : null, unsentText };
}

/**
 * Whether the client did not receive the recorded final answer: it got no text (white
 * space alone), or only a strict beginning of the answer.
 */
export function unsent(streamed: string, recorded: string): boolean {
  const answer = recorded.trimEnd();
  if (answer === "") return false;
  if (streamed.trim() === "") return true;
  return answer.startsWith(streamed) && streamed.length < answer.length;
}

/**
 * What the client still lacks of the recovered answer: the rest after the beginning it
 * received, or all of it.
 */
export function recoveredRest(streamed: string, recovered: string): string {
  return streamed.trim() !== "" && recovered.startsWith(streamed)
    ? recovered.slice(streamed.length)
    : recovered;
}
