/**
 * What a turn's session records say: the profile's record readers (plugins) turn each
 * record into an event, and the pure `foldRecordEvents` reads the turn's events in order —
 * an API error the turn ended on, a stop reason the wire did not carry, a turn the agent
 * recorded as aborted, an answer the model gave and the agent dropped (output counted,
 * nothing recorded), or a turn that recovered (an error, then a final answer).
 */
import { classify } from "./classify.ts";
import type { Cause } from "../core/decide.ts";
import type { LoadedRecordReader, RecordEvent } from "../plugin/api.ts";
import type { Classifier } from "./classifier.ts";
import { RecordEventSchema } from "../plugin/api.ts";
import { callPlugin } from "../plugin/call.ts";
import type { SessionRecord } from "./session_records.ts";

/** An event with the record it was read from. */
export interface ReadEvent {
  event: RecordEvent;
  reader: string;
  path: string;
  offset: number;
}

/** Reads records with the readers: per record, the first reader's answer. */
export function readRecordEvents(
  records: readonly SessionRecord[],
  readers: readonly LoadedRecordReader[],
  diagnostics: string[],
): ReadEvent[] {
  const events: ReadEvent[] = [];
  if (readers.length === 0) return events;
  for (const r of records) {
    for (const reader of readers) {
      const event = callPlugin(
        { name: `reader ${reader.id}`, origin: reader.origin, answer: "event" },
        () => reader.read(r.record),
        RecordEventSchema(),
        diagnostics,
      );
      if (event) {
        events.push({ event, reader: reader.id, path: r.path, offset: r.offset });
        break;
      }
    }
  }
  return events;
}

/** The turn's reading of its records. */
export interface RecordVerdict {
  /** The error the turn ended on (no final answer after it). */
  error: ReadEvent & { event: Extract<RecordEvent, { kind: "error" }> } | null;
  /** A stop reason the agent recorded. */
  stop: ReadEvent & { event: Extract<RecordEvent, { kind: "stop" }> } | null;
  /** The agent recorded the turn as ended before its final message. */
  aborted: ReadEvent & { event: Extract<RecordEvent, { kind: "aborted" }> } | null;
  /** An error came, then a final answer: the turn recovered. */
  recovered: boolean;
  /**
   * The turn's prompt, when the agent records the final answer before it answers
   * (`answerFirst`) and none came after it: the turn ended before its final message.
   */
  unanswered: ReadEvent | null;
  /** The final answer's text as the agent recorded it (the last final reply). */
  finalText: string | null;
  /**
   * A response's usage counted output while the agent recorded no content from it (no
   * reply since the previous usage or the prompt), and no final answer came after it: the
   * model answered and the agent dropped the answer.
   */
  dropped: ReadEvent & { event: Extract<RecordEvent, { kind: "usage" }> } | null;
}

/** Whether a prompt event says the agent records the answer before it answers. */
function answerFirst(e: ReadEvent): boolean {
  return e.event.kind === "prompt" && e.event.answerFirst === true;
}

/**
 * Folds the turn's events. The turn's own events start after the last `prompt` (earlier
 * ones are an earlier turn's late writes). An error followed by a final reply was
 * recovered from; an error with nothing final after it is the turn's end, even when the
 * agent had said it would retry.
 */
export function foldRecordEvents(events: readonly ReadEvent[]): RecordVerdict {
  let start = 0;
  let prompt: ReadEvent | null = null;
  events.forEach((e, i) => {
    if (e.event.kind === "prompt") start = i + 1, prompt = e;
  });
  const verdict: RecordVerdict = {
    error: null,
    stop: null,
    aborted: null,
    recovered: false,
    finalText: null,
    unanswered: null,
    dropped: null,
  };
  let answered = false;
  /** A reply came since the last usage (or the prompt). */
  let content = false;
  for (const e of events.slice(start)) {
    const ev = e.event;
    switch (ev.kind) {
      case "usage":
        if (ev.output > 0 && !content) verdict.dropped = { ...e, event: ev };
        content = false;
        break;
      case "error":
        verdict.error = { ...e, event: ev };
        break;
      case "stop":
        verdict.stop = { ...e, event: ev };
        break;
      case "aborted":
        verdict.aborted = { ...e, event: ev };
        break;
      case "reply":
        content = true;
        if (!ev.final) break;
        if (verdict.error || verdict.aborted) verdict.recovered = true;
        verdict.error = null;
        verdict.aborted = null;
        verdict.stop = null;
        verdict.dropped = null;
        verdict.finalText = ev.text ?? verdict.finalText;
        answered = true;
        break;
    }
  }
  if (
    prompt !== null && answerFirst(prompt) && !answered && !verdict.error && !verdict.stop &&
    !verdict.aborted && !verdict.dropped
  ) {
    verdict.unanswered = prompt;
  }
  return verdict;
}

/** The records' causes as decide takes them. */
export interface RecordCauses {
  /** The reply was cut: the cause (an error the turn ended on, or an abort). */
  cut: Cause | null;
  /** A stop reason only the records show, with its cause. */
  stop: { stopReason: "max_tokens" | "refusal"; cause: Cause } | null;
}

/** Classifies the verdict's causes with the profile's classifier. */
export function recordCauses(
  verdict: RecordVerdict,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): RecordCauses {
  const anchor = (e: ReadEvent) => `records:${e.reader}`;
  const source = (e: ReadEvent) => ({ path: e.path, offset: e.offset });
  let cut: Cause | null = null;
  if (verdict.error) {
    const { event } = verdict.error;
    const { category, retry } = classify(
      event.cause,
      { cause: event.cause, category: event.category, code: event.code },
      classifier,
      now,
      diagnostics,
    );
    cut = {
      error: {
        code: event.code ?? null,
        message: event.cause,
        category,
        anchor: anchor(verdict.error),
        source: source(verdict.error),
      },
      retry,
    };
  } else if (verdict.aborted) {
    const { event } = verdict.aborted;
    const { category, retry } = classify(event.cause, undefined, classifier, now, diagnostics);
    cut = {
      error: {
        code: null,
        message: event.cause,
        category,
        anchor: anchor(verdict.aborted),
        source: source(verdict.aborted),
      },
      retry,
    };
  }
  if (!cut && verdict.unanswered) {
    const message = "the agent recorded the prompt but no final answer: the reply did not complete";
    const { category, retry } = classify(message, undefined, classifier, now, diagnostics);
    cut = {
      error: {
        code: null,
        message,
        category,
        anchor: anchor(verdict.unanswered),
        source: source(verdict.unanswered),
      },
      retry,
    };
  }
  let stop: RecordCauses["stop"] = null;
  if (verdict.dropped && !verdict.error && !verdict.stop) {
    // The answer the model gave is not in the records, and no error explains it: the agent
    // dropped it. The one answer the agents in the corpus drop so is a refusal (codex: a
    // message with a `refusal` part it cannot parse; plugins/codex_records.ts).
    const { event } = verdict.dropped;
    const message = `the model's response counted ${event.output} output token(s) and the ` +
      `agent recorded nothing of it: the answer was dropped (a refusal the agent does not show)`;
    diagnostics.push(message);
    const { retry } = classify(message, { cause: message, category: "context" }, classifier, now);
    stop = {
      stopReason: "refusal",
      cause: {
        error: {
          code: null,
          message,
          category: "context",
          anchor: anchor(verdict.dropped),
          source: source(verdict.dropped),
        },
        retry,
      },
    };
    // The turn's end without a final message is what the dropped answer looks like.
    if (verdict.aborted && !verdict.error) cut = null;
  } else if (verdict.stop) {
    const { event } = verdict.stop;
    const message = event.cause ??
      (event.stopReason === "max_tokens"
        ? "the reply stopped at the output token limit"
        : "the model refused to answer");
    const { retry } = classify(message, { cause: message, category: "context" }, classifier, now);
    stop = {
      stopReason: event.stopReason,
      cause: {
        error: {
          code: null,
          message,
          category: "context",
          anchor: anchor(verdict.stop),
          source: source(verdict.stop),
        },
        retry,
      },
    };
  }
  return { cut, stop };
}
