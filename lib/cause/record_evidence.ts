/**
 * What a turn's session records say: the profile's record readers (plugins) turn each
 * record into an event, and the pure `foldRecordEvents` reads the turn's events in order —
 * an API error the turn ended on, a stop reason the wire did not carry, a turn the agent
 * recorded as aborted, an answer the model gave and the agent dropped (output counted,
 * nothing recorded), or a turn that recovered (an error, then a final answer).
 */
import { classify } from "./classify.ts";
import type { RecordFacts } from "../core/decide.ts";
import { buildCause, type Cause } from "../core/cause.ts";
import type { AnchorHit, LoadedRecordReader, RecordEvent } from "../plugin/api.ts";
import type { Classifier } from "./classifier.ts";
import { RecordEventSchema } from "../plugin/api.ts";
import { callPlugin } from "../plugin/call.ts";
import { PLUGIN_CONTEXT } from "./text_class.ts";
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
        () => reader.read(r.record, PLUGIN_CONTEXT),
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

/**
 * Where the turn's own events are in a read of its records, and whether they hold its end
 * (a reader's `endsTurn` promise, lib/plugin/api.ts). `nth` is the place of the turn's
 * prompt among the prompts read (1: the first; more when an earlier turn's prompt landed
 * late, after this turn began): the turn's events run from that prompt to the next one
 * (`cut`: the index of that next prompt, where a later turn's events begin). The end is
 * there when, among them, the last event that says where the turn stands is a final reply,
 * an error the agent does not retry, a stop or an abort — or the prompt says `answerFirst`
 * (the agent recorded everything before it answered). A non-final reply (a tool call) or a
 * retried error means more is coming; `usage` says nothing of the end.
 */
export function turnSpan(
  events: readonly ReadEvent[],
  nth = 1,
): { prompts: number; cut: number | null; ended: boolean } {
  const prompts = events.flatMap((e, i) => (e.event.kind === "prompt" ? [i] : []));
  const cut = prompts[nth] ?? null;
  const seen = Math.min(prompts.length, nth);
  const at = prompts[nth - 1];
  if (at === undefined) return { prompts: seen, cut, ended: false };
  if (answerFirst(events[at])) return { prompts: seen, cut, ended: true };
  let ended = false;
  for (const { event } of events.slice(at + 1, cut ?? events.length)) {
    if (event.kind === "reply") ended = event.final;
    else if (event.kind === "error") ended = event.retrying !== true;
    else if (event.kind === "stop" || event.kind === "aborted") ended = true;
  }
  return { prompts: seen, cut, ended };
}

/** Whether the turn's records hold its end (see `turnSpan`). */
export function turnEnded(events: readonly ReadEvent[], nth = 1): boolean {
  return turnSpan(events, nth).ended;
}

/** The retry time an error event carries, as an anchor hit's retry (absent: none). */
function eventRetry(
  event: Extract<RecordEvent, { kind: "error" }>,
): { afterMs?: number; at?: string } | undefined {
  if (event.retryAfterMs === undefined && event.retryAt === undefined) return undefined;
  return {
    ...(event.retryAfterMs !== undefined ? { afterMs: event.retryAfterMs } : {}),
    ...(event.retryAt !== undefined ? { at: event.retryAt } : {}),
  };
}

/**
 * Classifies each of the verdict's causes with the profile's classifier, as the facts
 * decide weighs (lib/core/decide.ts `RecordFacts`): a category or retry time the reader
 * gave wins over the one read from the words.
 */
export function recordFacts(
  verdict: RecordVerdict,
  classifier: Classifier,
  now: number,
  diagnostics: string[],
): RecordFacts {
  const anchor = (e: ReadEvent) => `records:${e.reader}`;
  const source = (e: ReadEvent) => ({ path: e.path, offset: e.offset });
  const causeOf = (
    e: ReadEvent,
    message: string,
    hit: AnchorHit | undefined,
    code: number | string | null = null,
  ): Cause => {
    const { category, retry } = classify(message, hit, classifier, now, diagnostics);
    return buildCause({ code, message, category, anchor: anchor(e), source: source(e), retry });
  };
  let error: Cause | null = null;
  if (verdict.error) {
    const { event } = verdict.error;
    const retry = eventRetry(event);
    error = causeOf(verdict.error, event.cause, {
      cause: event.cause,
      category: event.category,
      code: event.code,
      ...(retry ? { retry } : {}),
    }, event.code ?? null);
  }
  const aborted = verdict.aborted
    ? causeOf(
      verdict.aborted,
      verdict.aborted.event.cause,
      verdict.aborted.event.category
        ? { cause: verdict.aborted.event.cause, category: verdict.aborted.event.category }
        : undefined,
    )
    : null;
  const unanswered = verdict.unanswered
    ? causeOf(
      verdict.unanswered,
      "the agent recorded the prompt but no final answer: the reply did not complete",
      undefined,
    )
    : null;
  // The answer the model gave is not in the records: a refusal the agent does not show
  // (decide weighs it against an error or a recorded stop).
  let dropped: Cause | null = null;
  if (verdict.dropped) {
    const message = `the model's response counted ${verdict.dropped.event.output} output ` +
      `token(s) and the agent recorded nothing of it: the answer was dropped (a refusal the agent does not show)`;
    dropped = causeOf(verdict.dropped, message, { cause: message, category: "context" });
  }
  let stop: RecordFacts["stop"] = null;
  if (verdict.stop) {
    const { event } = verdict.stop;
    const message = event.cause ??
      (event.stopReason === "max_tokens"
        ? "the reply stopped at the output token limit"
        : "the model refused to answer");
    stop = {
      stopReason: event.stopReason,
      cause: causeOf(verdict.stop, message, { cause: message, category: "context" }),
    };
  }
  return {
    error,
    errorNamed: verdict.error?.event.category !== undefined,
    aborted,
    stop,
    dropped,
    unanswered,
    final: verdict.finalText !== null,
  };
}
