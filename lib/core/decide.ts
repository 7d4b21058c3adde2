/**
 * decide: the true outcome of a turn as a pure function of its facts. Table-tested over
 * every combination; everything that touches processes, files and clocks stays outside.
 */
import type { RetryHint, Status, TurnError } from "./outcome.ts";
import { retryHint } from "./retry_hint.ts";
import { buildCause, type Cause } from "./cause.ts";

export type { Cause } from "./cause.ts";

/**
 * What the agent's session records show of the turn (docs/EVIDENCE.md), each read and
 * classified on its own by lib/cause/record_evidence.ts; decide weighs them against each
 * other and against the wire. The records' events after the turn's prompt only.
 */
export interface RecordFacts {
  /** The API error the turn ended on (no final answer after it). */
  error: Cause | null;
  /** The reader named the error's category itself (not read from the words). */
  errorNamed?: boolean;
  /** The agent recorded the turn as ended before its final message. */
  aborted: Cause | null;
  /** A stop reason the agent recorded (`max_tokens`, `refusal`), with its cause. */
  stop: RecordedStop | null;
  /** A response's usage counted output the agent recorded nothing of: a dropped answer. */
  dropped: Cause | null;
  /** The agent records the answer first, and none came after the prompt: the cause. */
  unanswered: Cause | null;
  /** The records hold a final answer (the last event that counts). */
  final: boolean;
}

/**
 * Evidence beyond the wire (proxy; docs/EVIDENCE.md): the agent's session records and the
 * wire's contradictions, each a fact of its own; decide weighs them. Absent: none was read.
 */
export interface BeyondWireFacts {
  /** What the session records show (null: the profile names none, or none were read). */
  records?: RecordFacts | null;
  /** The wire contradicts itself (usage with no output, a final message with no content). */
  contradiction?: Cause | null;
  /** The reply the client saw is a strict beginning of the final answer the agent recorded. */
  shortfall?: Cause | null;
  /** The agent's usage counts output for a turn that showed nothing: its answer was dropped. */
  dropped?: Cause | null;
  /**
   * The final answer the records hold did not reach the client: the wire carried none of
   * its text, or only a strict beginning of it (a cut stream the agent then answered
   * without streaming, an answer that went only to the session file).
   */
  unsentReply?: boolean;
}

/**
 * What the agent's own notices in the streamed text say (lib/cause/notices.ts): retry
 * banners and failure lines the agent streams as if they were the model's reply.
 */
export interface NoticeFacts {
  /**
   * The failure notice the text ends on (only notices after the model's text, if any),
   * classified; null: the text ends on no failure notice.
   */
  failure: Cause | null;
  /** Characters of the model's own text (the streamed text less the agent's notices). */
  modelChars: number;
  /** How many notices the text holds. */
  count: number;
}

/** Everything known about a turn when it ends. */
export interface TurnFacts extends BeyondWireFacts {
  /** turnguard was asked to stop the turn (a forwarded signal, or session/cancel). */
  cancelled: boolean;
  /**
   * Proxy mode: the client closed its input while the turn ran (it gave up on the turn
   * before the agent exited).
   */
  clientGone?: boolean;
  /** How the agent process ended (run mode; proxy mode: the agent died during the turn). */
  exit: { code: number | null; signal: string | null } | null;
  /**
   * Proxy mode: the agent process died during the turn (an agent that serves a session is
   * meant to outlive its turns); `agentError` then holds its exit status and last words.
   */
  diedMidTurn?: boolean;
  /** Run mode: the agent could not be started, and why (the turn never ran). */
  notStarted?: Cause | null;
  /** Proxy mode: the agent's stopReason, when it answered with a result. */
  stopReason: string | null;
  /** The failure the agent reported itself (non-zero exit's stderr, a JSON-RPC error). */
  agentError: Cause | null;
  /**
   * Proxy mode: the stop reason the agent's error really reports (an output-token limit, a
   * refusal), when it reported one as a JSON-RPC error instead of a `stopReason`.
   */
  errorStop?: "max_tokens" | "refusal" | null;
  /** Bytes of stdout (run) or characters streamed (proxy). */
  output: number;
  /** Run mode: the output is white space alone. */
  outputBlank?: boolean;
  /** The cause found in the turn's appended log bytes. */
  logCause: Cause | null;
  /** The turn was cut short by turnguard's silence timeout. */
  timeout: Cause | null;
  /**
   * turnguard ended the turn early (`--fail-fast`, lib/core/end_early.ts): the agent was
   * retrying this cause, which retrying cannot cure.
   */
  endedEarly?: Cause | null;
  /**
   * Proxy mode: the failure the turn's short streamed text reads as (agents stream the
   * cause as a notice just before they answer with an error). Never a failure by itself.
   */
  textCause?: Cause | null;
  /** Characters of reply text streamed (`output` also counts other updates). */
  replyChars?: number;
  /** What the agent's own notices in the streamed text say (null: none read). */
  notices?: NoticeFacts | null;
  /** Proxy `--recover-replies`: a recovered reply is delivered to the client. */
  recoverReplies?: boolean;
}

/** A stop reason only the agent's records show, and its cause. */
export interface RecordedStop {
  stopReason: "max_tokens" | "refusal";
  cause: Cause;
}

/** What decide concludes. `swallowed`: the agent hid this failure (exit 0 or end_turn). */
export interface Decision {
  status: Status;
  error: TurnError | null;
  retry: RetryHint | null;
  swallowed: boolean;
  /**
   * The records' final answer is a reply the client did not receive: the Outcome carries it
   * (`reply.recovered`), and with `--recover-replies` the client is sent it.
   */
  recovered?: true;
  /** What the facts showed that the status does not say (diagnostics for the Outcome). */
  notes?: string[];
}

const ok = (status: Status): Decision => ({ status, error: null, retry: null, swallowed: false });
const failed = (cause: Cause, swallowed = false): Decision => ({
  status: "failed",
  error: cause.error,
  retry: cause.retry,
  swallowed,
});
/** A reply cut short: its partial text stands, the cause is said (and hidden by the agent). */
const truncated = (cause: Cause): Decision => ({
  status: "truncated",
  error: cause.error,
  retry: cause.retry,
  swallowed: true,
});

/**
 * A generic agent error yields to a specific cause: one that only names the agent's wrapper
 * to the cause its records or its streamed text give; one of unknown category to the
 * records', else the text's, else the log's. Only a cause with a category counts. The
 * agent's code stays.
 */
function sharpen(agent: Cause, better: readonly (Cause | null)[], log: Cause | null): Cause {
  const generic = agent.error.category === "unknown";
  const known = (c: Cause | null): c is Cause => c !== null && c.error.category !== "unknown";
  const found = agent.wrapper || generic ? better.find(known) ?? null : null;
  const cause = found ?? (generic ? log : null);
  if (!cause) return agent;
  return buildCause({
    ...cause.error,
    code: agent.error.code ?? cause.error.code,
    retry: cause.retry,
  });
}

/**
 * The error the agent reported, refined by the evidence that says more (the most specific
 * evidence wins): an error its session records hold that names its category or the
 * provider's own code outranks the wire's status and words (qwen-code answers a spent quota
 * as JSON-RPC 429 "Rate limit exceeded"; its chat file holds `insufficient_quota`); else a
 * generic or wrapper error takes the records', the streamed text's or the log's cause. When
 * the records name the category the agent's error already has, the agent's error stands.
 */
function refine(agent: Cause, f: TurnFacts, notes: string[]): Cause {
  const recorded = f.records?.error ?? null;
  const category = recorded?.error.category;
  if (
    recorded && f.records && recordIsSpecific(f.records) && category !== "unknown" &&
    category !== agent.error.category
  ) {
    notes.push(
      `the agent reported ${agent.error.category} (${agent.error.message}); its records hold the more specific cause: ${category}`,
    );
    return recorded;
  }
  return sharpen(agent, [recorded, f.textCause ?? null], f.logCause);
}

/**
 * Whether the records' error is more specific than a wire error's status or words: its
 * reader named the category, or its code is the provider's own (a string such as
 * `insufficient_quota`, not a bare HTTP status).
 */
export function recordIsSpecific(r: RecordFacts): boolean {
  if (!r.error) return false;
  return r.errorNamed === true || typeof r.error.error.code === "string";
}

/** The fallback cause when a process failed and said nothing anywhere. */
export function exitCause(exit: { code: number | null; signal: string | null }): Cause {
  const message = exit.signal
    ? `killed by signal ${exit.signal}`
    : `exited with status ${exit.code}`;
  const category = exit.signal ? "crash" : "unknown";
  return buildCause({
    code: exit.code,
    message,
    category,
    retry: { ...retryHint(category), reason: "the agent failed without a known cause" },
  });
}

/**
 * An agent that died mid-turn whose last words name no known category, with no log cause
 * either, crashed: the category is `crash` (not retryable), whatever its words said of
 * when to retry.
 */
function asCrash(agent: Cause): Cause {
  return buildCause({ ...agent.error, category: "crash", retry: retryHint("crash", agent.retry) });
}

/** The agent's error as decide weighs it: a mid-turn death of no known cause is a crash. */
function agentErrorOf(f: TurnFacts): Cause | null {
  const e = f.agentError;
  if (!e || !f.diedMidTurn || e.error.category !== "unknown" || f.logCause) return e;
  return asCrash(e);
}

/**
 * Whether the turn was given up on before it ended: turnguard was asked to stop it, or the
 * client hung up and the agent then exited on its own with status 0 or by a signal (EOF,
 * turnguard's grace): that exit is not its crash. A failure status after the client hung up
 * is still the agent's failure. (Exported so that callers skip reading evidence for such a
 * turn.)
 */
export function givenUp(f: Pick<TurnFacts, "cancelled" | "clientGone" | "exit">): boolean {
  if (f.cancelled) return true;
  if (!f.clientGone || f.exit === null) return false;
  return f.exit.code === 0 || f.exit.signal !== null;
}

/**
 * Whether the turn's log cause can change the decision, so its logs are worth reading: the
 * turn was not cut short by the timeout nor given up on, and either the agent's error names
 * no known category or the agent gave no answer at all.
 */
export function needsLogCause(
  f: Pick<
    TurnFacts,
    | "cancelled"
    | "clientGone"
    | "exit"
    | "timeout"
    | "endedEarly"
    | "agentError"
    | "output"
    | "notices"
    | "replyChars"
  >,
): boolean {
  if (f.timeout || f.endedEarly || givenUp(f)) return false;
  return f.agentError ? f.agentError.error.category === "unknown" : answered(f) === 0;
}

/** Which evidence beyond the wire can change a turn's decision (see `evidenceBeyondWire`). */
export interface EvidenceWanted {
  /** The agent's session records. */
  records: boolean;
  /** The wire's contradictions (usage, an empty final message, a reply shorter than recorded). */
  contradictions: boolean;
}

/**
 * Which evidence beyond the wire can change the decision of a turn, so that callers gather
 * only that (docs/EVIDENCE.md): for a turn the agent ended as whole (`end_turn`), its session
 * records and the wire's contradictions (decide's `beyondWire` rows); for an error the agent
 * answered the prompt with, its records alone, which may name the cause more precisely
 * (`refine`); for a turn given up on, cut by the silence timeout, ended on another stop
 * reason or by the agent's death, none.
 */
export function evidenceBeyondWire(
  f: Pick<TurnFacts, "cancelled" | "stopReason" | "agentError" | "diedMidTurn" | "timeout">,
): EvidenceWanted {
  if (f.cancelled || f.timeout) return { records: false, contradictions: false };
  if (f.stopReason === "end_turn") return { records: true, contradictions: true };
  return { records: f.agentError !== null && !f.diedMidTurn, contradictions: false };
}

/**
 * What was streamed besides the agent's own notices: `output` less the streamed text when
 * that text is notices alone (a turn of retry banners gave no answer).
 */
function answered(f: Pick<TurnFacts, "output" | "notices" | "replyChars">): number {
  const n = f.notices;
  if (!n || n.count === 0 || n.modelChars > 0) return f.output;
  return Math.max(0, f.output - (f.replyChars ?? f.output));
}

/**
 * Decides a turn's status, error and retry hint. A failure the turn's streamed text reads
 * as, in a turn that ended normally, is said in a note and changes nothing — unless the
 * text is the agent's own notices ending on a failure (`notices`).
 */
export function decide(f: TurnFacts): Decision {
  const notes: string[] = [];
  // White space alone is no answer: a failure swallowed behind a lone newline still shows.
  const output = f.outputBlank ? 0 : f.output;
  let d = decideStatus({ ...f, output, agentError: agentErrorOf(f) }, notes);
  if (!f.recoverReplies && lostReply(f)) {
    notes.push(
      "the agent's records hold a final answer the client did not receive: it is reply.recovered (turnguard proxy --recover-replies delivers it)",
    );
    d = { ...d, recovered: true };
  }
  if (f.textCause && d.status === "ok") {
    const { category, anchor } = f.textCause.error;
    notes.push(
      `the agent's reply reads as a ${category} failure (anchor ${anchor}); the turn ended normally, so it stays ok`,
    );
  }
  return notes.length > 0 ? { ...d, notes } : d;
}

/** The records weighed among themselves: what cut the reply, what stopped it, whether whole. */
export interface RecordReading {
  cut: Cause | null;
  unanswered: Cause | null;
  stop: RecordedStop | null;
  /** The records hold the final answer and nothing after it went wrong. */
  final: boolean;
}

/**
 * The records' own reading. An error the turn ended on, else an abort, cuts the reply. A
 * response whose output the agent recorded nothing of, with no error and no recorded stop
 * to explain it, is a dropped answer: a refusal the agent does not show (the one answer the
 * agents in the corpus drop so: codex, a message with a `refusal` part it cannot parse,
 * plugins/codex_records.ts); the turn's end without a final message is what it looks like,
 * so it is no cut. A recorded prompt with no final answer cuts only when nothing else is said.
 * (Exported so that the proxy takes the reply text from the same reading.)
 */
export function weighRecords(r: RecordFacts, notes: string[] = []): RecordReading {
  let cut = r.error ?? r.aborted;
  let stop = r.stop;
  if (r.dropped && !r.error && !r.stop) {
    notes.push(r.dropped.error.message);
    stop = { stopReason: "refusal", cause: r.dropped };
    cut = null;
  }
  const unanswered = cut || stop ? null : r.unanswered;
  return { cut, unanswered, stop, final: r.final && !cut && !stop };
}

/**
 * What the evidence beyond the wire says of a turn the agent ended as whole: cut (the
 * cause), or stopped for a reason only the records show. The records' own reading comes
 * first. An unanswered prompt cuts a reply only when text was streamed (with none, the turn
 * reads as empty, as the wire says). The wire's contradictions yield to a final answer the
 * records hold; a reply shorter than that recorded answer is cut. Usage that counts output
 * nobody saw is a dropped answer: a refusal, unless the records hold the answer.
 */
function beyondWire(
  f: TurnFacts,
  notes: string[],
): { cut: Cause | null; stop: RecordedStop | null } {
  const r = f.records ? weighRecords(f.records, notes) : null;
  if (r?.cut || r?.stop) return { cut: r.cut, stop: r.stop };
  if (r?.unanswered) {
    if (replyChars(f) > 0) return { cut: r.unanswered, stop: null };
    notes.push("the agent recorded the prompt but no final answer, and streamed no text");
  }
  const final = r?.final === true;
  if (final && f.contradiction) {
    notes.push(`${f.contradiction.error.message} — but the agent's records hold its final answer`);
  }
  const cut = (final ? f.shortfall : f.contradiction) ?? null;
  if (!f.dropped || final) return { cut, stop: null };
  notes.push(f.dropped.error.message);
  return { cut, stop: { stopReason: "refusal", cause: f.dropped } };
}

/**
 * Whether the turn lost its reply: the agent ended it as whole, its records hold a final
 * answer recorded whole (nothing after it went wrong), and the client did not receive it.
 * That answer is a recovered reply. Delivered (`--recover-replies`), the turn is `ok`: the
 * client has the answer. Not delivered, the turn reads as the wire left it (cut short,
 * empty) and says where the answer is.
 */
function lostReply(f: TurnFacts): boolean {
  return f.stopReason === "end_turn" && f.unsentReply === true && f.records != null &&
    weighRecords(f.records).final;
}

/** Characters of the model's reply text (`output` when only that is known). */
function replyChars(f: TurnFacts): number {
  return f.notices ? f.notices.modelChars : f.replyChars ?? f.output;
}

function decideStatus(f: TurnFacts, notes: string[]): Decision {
  if (f.notStarted) return failed(f.notStarted);
  if (f.timeout) return failed(f.timeout);
  if (f.endedEarly) return failed(f.endedEarly);
  if (givenUp(f) || f.stopReason === "cancelled") return ok("cancelled");
  if (f.exit) {
    const { code, signal } = f.exit;
    if (signal !== null || (code !== null && code !== 0)) {
      return failed(
        f.agentError ? refine(f.agentError, f, notes) : f.logCause ?? exitCause(f.exit),
      );
    }
  }
  // A stop reason sent as an error is still that stop reason.
  if (f.agentError && f.errorStop) return ok(f.errorStop === "refusal" ? "refused" : "truncated");
  if (f.agentError) return failed(refine(f.agentError, f, notes));
  switch (f.stopReason) {
    case "refusal":
      return ok("refused");
    case "max_tokens":
    case "max_turn_requests":
      return ok("truncated");
  }
  // Evidence beyond the wire, for a turn the agent ended as whole: its records or the wire
  // itself say the reply was cut. With reply text: truncated (the text kept, the cause
  // said); with none: failed, since no answer exists.
  if (f.stopReason === "end_turn") {
    if (f.recoverReplies && lostReply(f)) {
      notes.push(
        "the agent's records hold a final answer the client did not receive: recovered, and sent to the client before the prompt's response (--recover-replies)",
      );
      return { ...ok("ok"), recovered: true };
    }
    const { cut, stop } = beyondWire(f, notes);
    if (stop?.stopReason === "refusal") return { ...ok("refused"), swallowed: true };
    if (stop) return truncated(stop.cause);
    if (cut) return replyChars(f) > 0 ? truncated(cut) : failed(cut, true);
  }
  // The agent's own notices: a text that ends on a failure notice is that failure; the
  // model's text before it, if any, is a reply cut short.
  const n = f.notices;
  if (n?.failure) return n.modelChars > 0 ? truncated(n.failure) : failed(n.failure, true);
  if (n && n.count > 0 && n.modelChars === 0) {
    notes.push(`the agent streamed only its own notices (${n.count}), no answer`);
  }
  if (answered(f) > 0) return ok("ok");
  if (f.logCause) return failed(f.logCause, true);
  return ok("empty");
}
