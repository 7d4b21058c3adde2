import { describe, expect, test } from "bun:test";
import {
  type Cause,
  decide,
  evidenceBeyondWire,
  exitCause,
  givenUp,
  needsLogCause,
  type NoticeFacts,
  type RecordedStop,
  type RecordFacts,
  recordIsSpecific,
  type TurnFacts,
} from "../../../lib/core/decide.ts";

const cause = (message: string, category: Cause["error"]["category"] = "quota"): Cause => ({
  error: { code: 429, message, category, anchor: "a", source: null },
  retry: { retryable: true, reason: "r", afterMs: 1000, at: null },
});
const LOG = cause("from the log");
const STDERR = cause("from stderr", "auth");
const GENERIC = cause("Internal error", "unknown");

const base: TurnFacts = {
  cancelled: false,
  exit: null,
  stopReason: null,
  agentError: null,
  output: 0,
  logCause: null,
  timeout: null,
};

describe("decide — run mode truth table (every combination)", () => {
  // exit ("0" | "2" | a signal), cancelled, stdout bytes, stderr cause?, log cause?
  //   -> status, error message, swallowed
  const rows: Array<[string, boolean, number, boolean, boolean, string, string | null, boolean]> = [
    ["0", false, 0, false, false, "empty", null, false],
    ["0", false, 0, false, true, "failed", "from the log", true],
    ["0", false, 0, true, false, "failed", "from stderr", false],
    ["0", false, 0, true, true, "failed", "from stderr", false],
    ["0", false, 5, false, false, "ok", null, false],
    ["0", false, 5, false, true, "ok", null, false],
    ["0", false, 5, true, false, "failed", "from stderr", false],
    ["0", false, 5, true, true, "failed", "from stderr", false],
    ["0", true, 0, false, false, "cancelled", null, false],
    ["0", true, 0, false, true, "cancelled", null, false],
    ["0", true, 0, true, false, "cancelled", null, false],
    ["0", true, 0, true, true, "cancelled", null, false],
    ["0", true, 5, false, false, "cancelled", null, false],
    ["0", true, 5, false, true, "cancelled", null, false],
    ["0", true, 5, true, false, "cancelled", null, false],
    ["0", true, 5, true, true, "cancelled", null, false],
    ["2", false, 0, false, false, "failed", "exited with status 2", false],
    ["2", false, 0, false, true, "failed", "from the log", false],
    ["2", false, 0, true, false, "failed", "from stderr", false],
    ["2", false, 0, true, true, "failed", "from stderr", false],
    ["2", false, 5, false, false, "failed", "exited with status 2", false],
    ["2", false, 5, false, true, "failed", "from the log", false],
    ["2", false, 5, true, false, "failed", "from stderr", false],
    ["2", false, 5, true, true, "failed", "from stderr", false],
    ["2", true, 0, false, false, "cancelled", null, false],
    ["2", true, 0, false, true, "cancelled", null, false],
    ["2", true, 0, true, false, "cancelled", null, false],
    ["2", true, 0, true, true, "cancelled", null, false],
    ["2", true, 5, false, false, "cancelled", null, false],
    ["2", true, 5, false, true, "cancelled", null, false],
    ["2", true, 5, true, false, "cancelled", null, false],
    ["2", true, 5, true, true, "cancelled", null, false],
    ["SIGKILL", false, 0, false, false, "failed", "killed by signal SIGKILL", false],
    ["SIGKILL", false, 0, false, true, "failed", "from the log", false],
    ["SIGKILL", false, 0, true, false, "failed", "from stderr", false],
    ["SIGKILL", false, 0, true, true, "failed", "from stderr", false],
    ["SIGKILL", false, 5, false, false, "failed", "killed by signal SIGKILL", false],
    ["SIGKILL", false, 5, false, true, "failed", "from the log", false],
    ["SIGKILL", false, 5, true, false, "failed", "from stderr", false],
    ["SIGKILL", false, 5, true, true, "failed", "from stderr", false],
    ["SIGKILL", true, 0, false, false, "cancelled", null, false],
    ["SIGKILL", true, 0, false, true, "cancelled", null, false],
    ["SIGKILL", true, 0, true, false, "cancelled", null, false],
    ["SIGKILL", true, 0, true, true, "cancelled", null, false],
    ["SIGKILL", true, 5, false, false, "cancelled", null, false],
    ["SIGKILL", true, 5, false, true, "cancelled", null, false],
    ["SIGKILL", true, 5, true, false, "cancelled", null, false],
    ["SIGKILL", true, 5, true, true, "cancelled", null, false],
  ];
  test("the table covers all 48 combinations", () => {
    expect(new Set(rows.map((r) => r.slice(0, 5).join())).size).toBe(48);
  });
  for (const [ex, cancelled, output, hasStderr, hasLog, status, message, swallowed] of rows) {
    test(`exit=${ex} cancelled=${cancelled} out=${output} stderr=${hasStderr} log=${hasLog}`, () => {
      const exit = ex.startsWith("SIG")
        ? { code: null, signal: ex }
        : { code: Number(ex), signal: null };
      const d = decide({
        ...base,
        exit,
        cancelled,
        output,
        agentError: hasStderr ? STDERR : null,
        logCause: hasLog ? LOG : null,
      });
      expect([d.status, d.error?.message ?? null, d.swallowed]).toEqual([
        status,
        message,
        swallowed,
      ]);
      expect(d.retry === null).toBe(status !== "failed");
    });
  }

  // exit, white space only, log cause? -> status, swallowed
  test.each([
    [0, false, false, "ok", false],
    [0, true, false, "empty", false],
    [0, true, true, "failed", true],
    [0, false, true, "ok", false],
    [2, true, false, "failed", false],
  ])("exit %d, blank output %p, log cause %p -> %s", (code, blank, log, status, swallowed) => {
    const d = decide({
      ...base,
      exit: { code, signal: null },
      output: 1,
      outputBlank: blank,
      logCause: log ? LOG : null,
    });
    expect([d.status as string, d.swallowed]).toEqual([status, swallowed]);
  });

  test("a generic agent error keeps its own code when sharpened by the log cause", () => {
    const d = decide({
      ...base,
      exit: { code: 1, signal: null },
      agentError: { ...GENERIC, error: { ...GENERIC.error, code: -32603 } },
      logCause: LOG,
    });
    expect(d.error).toEqual({ ...LOG.error, code: -32603 });
  });

  test("exitCause names the signal or the status", () => {
    expect(exitCause({ code: 3, signal: null }).error.message).toBe("exited with status 3");
    expect(exitCause({ code: null, signal: "SIGSEGV" }).error.category).toBe("crash");
  });
});

describe("decide — proxy mode (stop reasons)", () => {
  const rows: Array<[string | null, number, Cause | null, Cause | null, boolean, string]> = [
    ["end_turn", 10, null, null, false, "ok"],
    ["end_turn", 0, null, null, false, "empty"],
    ["end_turn", 0, null, LOG, false, "failed"],
    ["end_turn", 10, null, LOG, false, "ok"],
    ["max_tokens", 10, null, null, false, "truncated"],
    ["max_tokens", 0, null, LOG, false, "truncated"],
    ["max_turn_requests", 0, null, null, false, "truncated"],
    ["refusal", 0, null, LOG, false, "refused"],
    ["cancelled", 0, null, LOG, false, "cancelled"],
    ["end_turn", 0, null, null, true, "cancelled"],
    [null, 0, STDERR, null, false, "failed"],
    [null, 5, STDERR, LOG, false, "failed"],
  ];
  for (const [stopReason, output, agentError, logCause, cancelled, status] of rows) {
    test(`${stopReason} out=${output} err=${!!agentError} log=${!!logCause} cancelled=${cancelled}`, () => {
      expect(decide({ ...base, stopReason, output, agentError, logCause, cancelled }).status).toBe(
        status as never,
      );
    });
  }

  test("a timeout wins over everything and is the timeout cause", () => {
    const t = cause("silent for 30s", "timeout");
    const d = decide({ ...base, stopReason: "cancelled", cancelled: true, timeout: t, output: 9 });
    expect(d.status).toBe("failed");
    expect(d.error?.category).toBe("timeout");
  });
});

describe("decide — proxy mode (stop reasons sent as errors, wrapper errors)", () => {
  const TEXT = cause("Your API key does not have permission", "auth");
  const WRAPPER: Cause = { ...cause("Authentication required", "auth"), wrapper: true };
  // errorStop, agent error, streamed text cause, log cause -> status, error message
  const rows: Array<
    [
      "max_tokens" | "refusal" | null,
      Cause | null,
      Cause | null,
      Cause | null,
      string,
      string | null,
    ]
  > = [
    ["max_tokens", STDERR, null, null, "truncated", null],
    ["refusal", STDERR, null, LOG, "refused", null],
    ["max_tokens", null, null, null, "empty", null],
    [null, STDERR, TEXT, null, "failed", "from stderr"],
    [null, WRAPPER, TEXT, LOG, "failed", "Your API key does not have permission"],
    [null, WRAPPER, null, LOG, "failed", "Authentication required"],
    [null, GENERIC, TEXT, LOG, "failed", "Your API key does not have permission"],
    [null, GENERIC, null, LOG, "failed", "from the log"],
    [null, null, TEXT, null, "ok", null],
  ];
  for (const [errorStop, agentError, textCause, logCause, status, message] of rows) {
    test(`stop=${errorStop} err=${agentError?.error.message} text=${!!textCause} log=${!!logCause}`, () => {
      const d = decide({
        ...base,
        output: textCause ? 36 : 0,
        errorStop,
        agentError,
        textCause,
        logCause,
      });
      expect([d.status, d.error?.message ?? null]).toEqual([status, message]);
      // A stop reason is no error; an ok turn never has one.
      if (status !== "failed") expect([d.error, d.retry]).toEqual([null, null]);
    });
  }

  const WRAPPER_CODE: Cause = {
    error: { ...cause("Authentication required", "auth").error, code: -32000 },
    retry: cause("x").retry,
    wrapper: true,
  };
  test("the sharpened cause keeps the agent's own code", () => {
    const d = decide({ ...base, agentError: { ...WRAPPER_CODE }, textCause: TEXT });
    expect(d.error).toEqual({ ...TEXT.error, code: -32000 });
  });
});

// Evidence beyond the wire: the agent said end_turn; its session records or the wire's
// contradictions say the reply was cut (`cut`) or stopped (`recordedStop`).
const wireBase: TurnFacts = { ...base, stopReason: "end_turn" };
const recordCause = (
  message: string,
  category: Cause["error"]["category"] = "capacity",
): Cause => ({
  error: { code: null, message, category, anchor: "records:x", source: null },
  retry: { retryable: true, reason: "r", afterMs: null, at: null },
});

/** Record facts: nothing recorded but what a row gives. */
const recs = (r: Partial<RecordFacts>): RecordFacts => ({
  error: null,
  aborted: null,
  stop: null,
  dropped: null,
  unanswered: null,
  final: false,
  ...r,
});

describe("decide — evidence beyond the wire (proxy, end_turn; docs/EVIDENCE.md)", () => {
  const CUT = recordCause("API Error: 529 Overloaded");
  const MAX = { stopReason: "max_tokens" as const, cause: recordCause("output limit", "context") };
  const REFUSAL = { stopReason: "refusal" as const, cause: recordCause("refused", "context") };
  // replyChars, cut, recordedStop -> status, error message, swallowed
  type Stop = RecordedStop;
  const rows: Array<[number, Cause | null, Stop | null, string, string | null, boolean]> = [
    [10, null, null, "ok", null, false],
    [0, null, null, "empty", null, false],
    [10, CUT, null, "truncated", "API Error: 529 Overloaded", true],
    [0, CUT, null, "failed", "API Error: 529 Overloaded", true],
    [10, null, MAX, "truncated", "output limit", true],
    [0, null, MAX, "truncated", "output limit", true],
    [10, null, REFUSAL, "refused", null, true],
    [0, null, REFUSAL, "refused", null, true],
    [10, CUT, MAX, "truncated", "output limit", true],
  ];
  for (const [chars, cut, recordedStop, status, message, swallowed] of rows) {
    test(`chars=${chars} cut=${!!cut} stop=${recordedStop?.stopReason ?? null} -> ${status}`, () => {
      const records = recs({ error: cut, stop: recordedStop });
      const d = decide({ ...wireBase, output: chars, replyChars: chars, records });
      expect([d.status, d.error?.message ?? null, d.swallowed]).toEqual([
        status,
        message,
        swallowed,
      ]);
    });
  }
  test("the wire's own verdicts win: an agent error, a wire max_tokens, a cancel", () => {
    const err = recordCause("agent said", "auth");
    const records = recs({ error: CUT });
    expect(decide({ ...wireBase, agentError: err, records, output: 5 }).error?.message).toBe(
      "agent said",
    );
    expect(decide({ ...wireBase, stopReason: "max_tokens", records, output: 5 }).error)
      .toBeNull();
    expect(decide({ ...wireBase, cancelled: true, records, output: 5 }).status).toBe("cancelled");
  });
  test("only reply text makes a cut turn truncated: tool calls alone are no partial answer", () => {
    const records = recs({ error: CUT });
    expect(decide({ ...wireBase, output: 4, replyChars: 0, records }).status).toBe("failed");
  });
  test("a truncated turn keeps the cause's retry hint", () => {
    const records = recs({ error: CUT });
    expect(decide({ ...wireBase, output: 3, replyChars: 3, records }).retry?.retryable).toBe(true);
  });
  test("the records count only for a turn the agent ended as whole (end_turn)", () => {
    const records = recs({ error: CUT });
    expect(decide({ ...base, output: 5, replyChars: 5, records }).status).toBe("ok");
  });
});

describe("decide — records against the wire (proxy, end_turn; docs/EVIDENCE.md)", () => {
  const CUT = recordCause("API Error: 529 Overloaded");
  const UNANSWERED = recordCause("the agent recorded the prompt but no final answer", "unknown");
  const WIRE = recordCause("the turn ended while its final message (m1) had no content", "unknown");
  const SHORT = recordCause(
    "the reply the client saw is shorter than the recorded answer",
    "unknown",
  );
  const DROPPED = recordCause("usage counts 9 output tokens but it streamed nothing", "unknown");
  const MAX = { stopReason: "max_tokens" as const, cause: recordCause("output limit", "context") };
  const ABORT = recordCause("codex aborted the turn (interrupted)", "unknown");
  type Row = {
    chars: number;
    cut?: Cause;
    aborted?: Cause;
    unanswered?: Cause;
    stop?: RecordedStop;
    final?: boolean;
    recordedDrop?: Cause;
    contradiction?: Cause;
    shortfall?: Cause;
    dropped?: Cause;
    // -> status, error message, swallowed, notes
    want: [string, string | null, boolean, string[]];
  };
  const rows: Row[] = [
    // An unanswered prompt cuts a reply with text; with none the turn is empty, said in a note.
    { chars: 5, unanswered: UNANSWERED, want: ["truncated", UNANSWERED.error.message, true, []] },
    {
      chars: 0,
      unanswered: UNANSWERED,
      want: ["empty", null, false, [
        "the agent recorded the prompt but no final answer, and streamed no text",
      ]],
    },
    // ... and then the wire's own contradiction still counts.
    {
      chars: 0,
      unanswered: UNANSWERED,
      contradiction: WIRE,
      want: ["failed", WIRE.error.message, true, [
        "the agent recorded the prompt but no final answer, and streamed no text",
      ]],
    },
    // The records' own reading comes first.
    {
      chars: 5,
      cut: CUT,
      unanswered: UNANSWERED,
      contradiction: WIRE,
      dropped: DROPPED,
      want: ["truncated", CUT.error.message, true, []],
    },
    { chars: 5, stop: MAX, contradiction: WIRE, want: ["truncated", "output limit", true, []] },
    // The wire contradicts itself: cut, unless the records hold the final answer.
    { chars: 5, contradiction: WIRE, want: ["truncated", WIRE.error.message, true, []] },
    { chars: 0, contradiction: WIRE, want: ["failed", WIRE.error.message, true, []] },
    {
      chars: 5,
      final: true,
      contradiction: WIRE,
      want: ["ok", null, false, [
        `${WIRE.error.message} — but the agent's records hold its final answer`,
      ]],
    },
    // A reply shorter than the recorded answer is cut (it needs the recorded answer).
    { chars: 5, final: true, shortfall: SHORT, want: ["truncated", SHORT.error.message, true, []] },
    { chars: 5, shortfall: SHORT, want: ["ok", null, false, []] },
    // A dropped answer is a refusal, unless the records hold the answer.
    { chars: 0, dropped: DROPPED, want: ["refused", null, true, [DROPPED.error.message]] },
    {
      chars: 0,
      dropped: DROPPED,
      contradiction: WIRE,
      want: ["refused", null, true, [DROPPED.error.message]],
    },
    { chars: 0, final: true, dropped: DROPPED, want: ["empty", null, false, []] },
    // The records weighed among themselves. An abort cuts like an error; the error says more.
    { chars: 5, aborted: ABORT, want: ["truncated", ABORT.error.message, true, []] },
    { chars: 5, cut: CUT, aborted: ABORT, want: ["truncated", CUT.error.message, true, []] },
    // An answer the agent recorded nothing of is a refusal; the abort is what it looks like.
    {
      chars: 0,
      recordedDrop: DROPPED,
      aborted: ABORT,
      want: ["refused", null, true, [DROPPED.error.message]],
    },
    // ... unless an error or a recorded stop explains it.
    { chars: 0, recordedDrop: DROPPED, cut: CUT, want: ["failed", CUT.error.message, true, []] },
    { chars: 5, recordedDrop: DROPPED, stop: MAX, want: ["truncated", "output limit", true, []] },
    // A recorded final answer does not outweigh an error or a stop recorded with it.
    { chars: 5, final: true, cut: CUT, want: ["truncated", CUT.error.message, true, []] },
    { chars: 5, final: true, stop: MAX, want: ["truncated", "output limit", true, []] },
    // An unanswered prompt yields to what the records say of the turn.
    {
      chars: 5,
      unanswered: UNANSWERED,
      stop: MAX,
      want: ["truncated", "output limit", true, []],
    },
  ];
  for (const r of rows) {
    const name = Object.entries(r).filter(([k]) => k !== "want").map(([k, v]) =>
      typeof v === "object" ? k : `${k}=${v}`
    ).join(" ");
    test(`${name} -> ${r.want[0]}`, () => {
      const d = decide({
        ...wireBase,
        output: r.chars,
        replyChars: r.chars,
        records: recs({
          error: r.cut ?? null,
          aborted: r.aborted ?? null,
          unanswered: r.unanswered ?? null,
          stop: r.stop ?? null,
          final: r.final ?? false,
          dropped: r.recordedDrop ?? null,
        }),
        contradiction: r.contradiction ?? null,
        shortfall: r.shortfall ?? null,
        dropped: r.dropped ?? null,
      });
      expect([d.status, d.error?.message ?? null, d.swallowed, d.notes ?? []]).toEqual(r.want);
    });
  }
});

describe("decide — proxy mode: the client hung up, then the agent died", () => {
  // The proxy folds the dead agent's status into its error (agentError) and passes the exit.
  const DEAD = cause("agent exited with status 2: boom", "crash");
  // clientGone, exit code, exit signal, cancelled -> status, error message
  const rows: Array<[boolean, number | null, string | null, boolean, string, string | null]> = [
    [true, 0, null, false, "cancelled", null],
    [true, null, "SIGTERM", false, "cancelled", null],
    [true, null, "SIGKILL", false, "cancelled", null],
    // A failure status after the client hung up is still the agent's failure.
    [true, 2, null, false, "failed", "agent exited with status 2: boom"],
    [true, 2, null, true, "cancelled", null],
    [false, 0, null, false, "failed", "agent exited with status 2: boom"],
    [false, null, "SIGTERM", false, "failed", "agent exited with status 2: boom"],
    [false, 2, null, false, "failed", "agent exited with status 2: boom"],
    [false, 2, null, true, "cancelled", null],
  ];
  for (const [clientGone, code, signal, cancelled, status, message] of rows) {
    test(`clientGone=${clientGone} exit=${code ?? signal} cancelled=${cancelled}`, () => {
      const facts = { ...base, clientGone, cancelled, exit: { code, signal }, agentError: DEAD };
      const d = decide(facts);
      expect([d.status, d.error?.message ?? null]).toEqual([status, message]);
      expect(givenUp(facts)).toBe(status === "cancelled");
    });
  }

  test("without an exit (the agent answered), a gone client decides nothing", () => {
    expect(decide({ ...base, clientGone: true, stopReason: "end_turn", output: 3 }).status)
      .toBe("ok");
    expect(givenUp({ cancelled: false, clientGone: true, exit: null })).toBe(false);
  });
});

describe("decide — run mode: the agent could not be started", () => {
  const NOT_STARTED: Cause = {
    error: {
      code: 127,
      message: "nope: command not found",
      category: "crash",
      anchor: null,
      source: null,
    },
    retry: { retryable: false, reason: "crash: not retryable", afterMs: null, at: null },
  };
  test("is failed with its cause, whatever else is known", () => {
    for (const other of [{}, { cancelled: true }, { timeout: LOG }, { output: 5, logCause: LOG }]) {
      expect(decide({ ...base, ...other, notStarted: NOT_STARTED })).toEqual({
        status: "failed",
        error: NOT_STARTED.error,
        retry: NOT_STARTED.retry,
        swallowed: false,
      });
    }
  });
});

describe("decide — proxy mode: the agent died mid-turn (its last words as the agent error)", () => {
  const words = (category: Cause["error"]["category"], afterMs: number | null = null): Cause => ({
    error: {
      code: 2,
      message: "agent exited with status 2: boom",
      category,
      anchor: null,
      source: null,
    },
    retry: { retryable: false, reason: "r", afterMs, at: afterMs === null ? null : "t" },
  });
  const TEXT = cause("You've hit your usage limit", "quota");
  // diedMidTurn, exit, words' category, log cause?, streamed text cause?
  //   -> status, category, message, retryable
  const rows: Array<
    [
      boolean,
      string,
      Cause["error"]["category"],
      boolean,
      boolean,
      string,
      string | null,
      string | null,
      boolean | null,
    ]
  > = [
    // No known cause anywhere: the agent crashed.
    [
      true,
      "2",
      "unknown",
      false,
      false,
      "failed",
      "crash",
      "agent exited with status 2: boom",
      false,
    ],
    [
      true,
      "0",
      "unknown",
      false,
      false,
      "failed",
      "crash",
      "agent exited with status 2: boom",
      false,
    ],
    [
      true,
      "SIGKILL",
      "unknown",
      false,
      false,
      "failed",
      "crash",
      "agent exited with status 2: boom",
      false,
    ],
    // A crash is a crash before the streamed text is read.
    [
      true,
      "2",
      "unknown",
      false,
      true,
      "failed",
      "crash",
      "agent exited with status 2: boom",
      false,
    ],
    // Its last words name a category: that stands.
    [
      true,
      "2",
      "network",
      false,
      false,
      "failed",
      "network",
      "agent exited with status 2: boom",
      false,
    ],
    // The log names the cause: it sharpens the unknown words (no crash).
    [true, "2", "unknown", true, false, "failed", "quota", "from the log", true],
    [true, "2", "unknown", true, true, "failed", "quota", "You've hit your usage limit", true],
    // Run mode (the agent is meant to exit): unknown words stay unknown.
    [
      false,
      "2",
      "unknown",
      false,
      false,
      "failed",
      "unknown",
      "agent exited with status 2: boom",
      false,
    ],
    [false, "2", "unknown", false, true, "failed", "quota", "You've hit your usage limit", true],
  ];
  for (const [died, ex, category, hasLog, hasText, status, cat, message, retryable] of rows) {
    test(`died=${died} exit=${ex} words=${category} log=${hasLog} text=${hasText}`, () => {
      const exit = ex.startsWith("SIG")
        ? { code: null, signal: ex }
        : { code: Number(ex), signal: null };
      const d = decide({
        ...base,
        exit,
        diedMidTurn: died,
        agentError: words(category),
        logCause: hasLog ? LOG : null,
        textCause: hasText ? TEXT : null,
      });
      expect([
        d.status,
        d.error?.category ?? null,
        d.error?.message ?? null,
        d.retry?.retryable ?? null,
      ])
        .toEqual([status, cat, message, retryable]);
    });
  }

  test("a crash is not retryable, whatever its words said of when; the time is kept", () => {
    const d = decide({
      ...base,
      exit: { code: 1, signal: null },
      diedMidTurn: true,
      agentError: words("unknown", 5000),
    });
    expect(d.retry).toEqual({
      retryable: false,
      reason: "crash: not retryable",
      afterMs: 5000,
      at: "t",
    });
  });
});

describe("decide — the streamed text of a turn that ended normally", () => {
  const TEXT: Cause = {
    ...cause("You've hit your usage limit", "quota"),
    error: { ...cause("x").error, message: "usage limit", anchor: "t.quota" },
  };
  // stop reason, output, text cause? -> status, note?
  const rows: Array<[string, number, boolean, string, boolean]> = [
    ["end_turn", 28, true, "ok", true],
    ["end_turn", 28, false, "ok", false],
    ["max_tokens", 28, true, "truncated", false],
    ["refusal", 28, true, "refused", false],
    ["cancelled", 28, true, "cancelled", false],
  ];
  for (const [stopReason, output, hasText, status, noted] of rows) {
    test(`${stopReason} out=${output} text=${hasText} -> ${status}${noted ? " + note" : ""}`, () => {
      const d = decide({ ...base, stopReason, output, textCause: hasText ? TEXT : null });
      expect([d.status as string, d.error, d.notes ?? null]).toEqual([
        status,
        null,
        noted
          ? [
            "the agent's reply reads as a quota failure (anchor t.quota); the turn ended normally, so it stays ok",
          ]
          : null,
      ]);
    });
  }
  test("a failed turn has no note: the text's cause is in its error", () => {
    const d = decide({
      ...base,
      agentError: { ...cause("Internal error", "unknown"), wrapper: true },
      textCause: TEXT,
      output: 28,
    });
    expect([d.status, d.error?.message, d.notes]).toEqual(["failed", "usage limit", undefined]);
  });
});

describe("needsLogCause — whether the logs can change the decision", () => {
  const T = cause("silent", "timeout");
  // timeout?, cancelled, clientGone + exit 0, agent error category (or none), output -> reads
  const rows: Array<
    [boolean, boolean, boolean, Cause["error"]["category"] | null, number, boolean]
  > = [
    [false, false, false, null, 0, true],
    [false, false, false, null, 5, false],
    [false, false, false, "unknown", 5, true],
    [false, false, false, "unknown", 0, true],
    [false, false, false, "auth", 0, false],
    [false, false, false, "auth", 5, false],
    [true, false, false, null, 0, false],
    [true, false, false, "unknown", 0, false],
    [false, true, false, null, 0, false],
    [false, true, false, "unknown", 0, false],
    [false, false, true, "unknown", 0, false],
    [false, false, true, null, 0, false],
  ];
  for (const [timeout, cancelled, gone, category, output, reads] of rows) {
    test(`timeout=${timeout} cancelled=${cancelled} gone=${gone} err=${category} out=${output}`, () => {
      expect(needsLogCause({
        timeout: timeout ? T : null,
        cancelled,
        clientGone: gone,
        exit: gone ? { code: 0, signal: null } : null,
        agentError: category ? cause("e", category) : null,
        output,
      })).toBe(reads);
    });
  }
});

describe("decide — records refine an error the agent reported (the most specific evidence wins)", () => {
  // qwen-code answers a spent quota as JSON-RPC 429 "Rate limit exceeded"; its chat file
  // holds the provider's `insufficient_quota`.
  const WIRE_429 = cause("Rate limit exceeded", "rate_limit");
  const QUOTA: Cause = {
    error: {
      code: "insufficient_quota",
      message: "You exceeded your current quota",
      category: "quota",
      anchor: "records:qwen.chat",
      source: null,
    },
    retry: { retryable: false, reason: "quota", afterMs: null, at: null },
  };
  const WORDS = recordCause("upstream said: overloaded", "capacity");
  const NAMELESS = recordCause("something odd happened", "unknown");
  const WRAPPER: Cause = { ...cause("Internal error", "capacity"), wrapper: true };
  // wire error, records' error, specific? -> category, message, a note?
  const rows: Array<[string, Cause, Cause | null, boolean, string, string, boolean]> = [
    [
      "a specific record outranks the wire's status",
      WIRE_429,
      QUOTA,
      true,
      "quota",
      QUOTA.error.message,
      true,
    ],
    [
      "a record's words do not outrank a known wire category",
      WIRE_429,
      WORDS,
      false,
      "rate_limit",
      "Rate limit exceeded",
      false,
    ],
    [
      "a record's words sharpen a generic wire error",
      GENERIC,
      WORDS,
      false,
      "capacity",
      WORDS.error.message,
      false,
    ],
    [
      "a record's words sharpen a wrapper's error",
      WRAPPER,
      WORDS,
      false,
      "capacity",
      WORDS.error.message,
      false,
    ],
    [
      "a specific record of unknown category changes nothing",
      WIRE_429,
      { ...NAMELESS },
      true,
      "rate_limit",
      "Rate limit exceeded",
      false,
    ],
    [
      "the same category: the agent's error stands",
      cause("429 quota", "quota"),
      QUOTA,
      true,
      "quota",
      "429 quota",
      false,
    ],
    ["no records: the wire", WIRE_429, null, false, "rate_limit", "Rate limit exceeded", false],
    // A record's words of no known category do not replace a generic error.
    [
      "a nameless record leaves a generic error",
      GENERIC,
      NAMELESS,
      false,
      "unknown",
      "Internal error",
      false,
    ],
  ];
  for (const [name, wire, recorded, specific, category, message, note] of rows) {
    test(name, () => {
      const d = decide({
        ...base,
        stopReason: null,
        agentError: wire,
        records: recs({ error: recorded, errorNamed: specific }),
      });
      expect([d.status, d.error?.category, d.error?.message, (d.notes ?? []).length > 0])
        .toEqual(["failed", category, message, note]);
    });
  }
  // Which recorded error outranks the wire: named category?, its code -> specific?
  const specificRows: Array<[string, boolean, number | string | null, boolean]> = [
    ["the reader named the category", true, null, true],
    ["the provider's own code", false, "insufficient_quota", true],
    ["a bare HTTP status", false, 429, false],
    ["words alone", false, null, false],
  ];
  for (const [name, named, code, specific] of specificRows) {
    test(`a recorded error is more specific than the wire: ${name} -> ${specific}`, () => {
      const error = { ...QUOTA, error: { ...QUOTA.error, code } };
      expect(recordIsSpecific(recs({ error, errorNamed: named }))).toBe(specific);
      const d = decide({
        ...base,
        agentError: WIRE_429,
        records: recs({ error, errorNamed: named }),
      });
      expect(d.error?.category).toBe(specific ? "quota" : "rate_limit");
    });
  }
  test("no recorded error is never more specific", () => {
    expect(recordIsSpecific(recs({ error: null, errorNamed: true }))).toBe(false);
  });
  test("the records' retry hint comes with their cause: quota is not retried as a rate limit", () => {
    const d = decide({
      ...base,
      agentError: WIRE_429,
      records: recs({ error: QUOTA, errorNamed: true }),
    });
    expect(d.retry?.retryable).toBe(false);
    expect(d.error?.code).toBe("insufficient_quota");
  });
  test("a generic error with a nameless record takes the log's cause", () => {
    const d = decide({
      ...base,
      agentError: GENERIC,
      records: recs({ error: NAMELESS }),
      logCause: LOG,
    });
    expect(d.error?.message).toBe("from the log");
  });
  test("an agent that died: its records refine its last words too", () => {
    const d = decide({
      ...base,
      exit: { code: 1, signal: null },
      agentError: WIRE_429,
      records: recs({ error: QUOTA, errorNamed: true }),
    });
    expect(d.error?.category).toBe("quota");
  });
  test("a stop reason sent as an error stays that stop reason", () => {
    const d = decide({
      ...base,
      agentError: WIRE_429,
      errorStop: "max_tokens",
      records: recs({ error: QUOTA, errorNamed: true }),
    });
    expect(d.status).toBe("truncated");
  });
});

describe("decide — the agent's own notices (lib/cause/notices.ts)", () => {
  const RATE = recordCause("API Error: 429 rate_limit_error", "rate_limit");
  const notices = (failure: Cause | null, modelChars: number, count = 2): NoticeFacts => ({
    failure,
    modelChars,
    count,
  });
  // stop reason, streamed chars, notices, log cause? -> status, message, swallowed, note?
  type Row = [string | null, number, NoticeFacts | null, boolean, string, string | null, boolean];
  const rows: Row[] = [
    // Only notices, ending on a failure: failed with it, hidden by the agent.
    ["end_turn", 60, notices(RATE, 0), false, "failed", RATE.error.message, true],
    // Model text, then the agent's notices ending on a failure: the reply was cut.
    ["end_turn", 90, notices(RATE, 30), false, "truncated", RATE.error.message, true],
    // Only notices, ending on none (retry banners, then nothing): no answer.
    ["end_turn", 60, notices(null, 0), false, "empty", null, false],
    ["end_turn", 60, notices(null, 0), true, "failed", "from the log", true],
    // Notices with the model's answer after them: a recovered turn, ok.
    ["end_turn", 90, notices(null, 30), false, "ok", null, false],
    // No notices read: the text stands.
    ["end_turn", 60, null, false, "ok", null, false],
    ["end_turn", 60, notices(null, 60, 0), false, "ok", null, false],
    // Run mode (no stop reason, exit 0): the same.
    [null, 60, notices(RATE, 0), false, "failed", RATE.error.message, true],
    // The wire's own stop reasons come first.
    ["max_tokens", 60, notices(RATE, 0), false, "truncated", null, false],
    ["cancelled", 60, notices(RATE, 0), false, "cancelled", null, false],
  ];
  for (const [stopReason, chars, n, log, status, message, swallowed] of rows) {
    const name = `stop=${stopReason} chars=${chars} failure=${!!n?.failure} model=${
      n?.modelChars ?? "-"
    } log=${log}`;
    test(`${name} -> ${status}`, () => {
      const d = decide({
        ...base,
        exit: stopReason === null ? { code: 0, signal: null } : null,
        stopReason,
        output: chars,
        replyChars: chars,
        notices: n,
        logCause: log ? LOG : null,
      });
      expect([d.status, d.error?.message ?? null, d.swallowed]).toEqual([
        status,
        message,
        swallowed,
      ]);
    });
  }
  test("a failure's retry hint and category are the notice's", () => {
    const d = decide({ ...base, stopReason: "end_turn", output: 9, notices: notices(RATE, 0) });
    expect([d.error?.category, d.retry?.retryable]).toEqual(["rate_limit", true]);
  });
  test("the records' cut outranks the notices (they name the provider's cause)", () => {
    const CUT = recordCause("API Error: 529 Overloaded");
    const d = decide({
      ...base,
      stopReason: "end_turn",
      output: 9,
      replyChars: 9,
      notices: notices(RATE, 0),
      records: recs({ error: CUT }),
    });
    expect([d.status, d.error?.message]).toEqual(["failed", CUT.error.message]);
  });
  test("a turn of notices alone is worth a log scan; one with an answer is not", () => {
    const f = { ...base, stopReason: "end_turn", output: 9, replyChars: 9 };
    expect(needsLogCause({ ...f, notices: notices(null, 0) })).toBe(true);
    expect(needsLogCause({ ...f, notices: notices(null, 4) })).toBe(false);
  });
});

describe("decide — which evidence beyond the wire can count (evidenceBeyondWire)", () => {
  const ERR = cause("Rate limit exceeded", "rate_limit");
  const TIMEOUT = cause("turn timed out", "timeout");
  // end of the turn -> records read?, contradictions read?
  const rows: Array<
    [string, Parameters<typeof evidenceBeyondWire>[0], boolean, boolean]
  > = [
    [
      "end_turn: records and contradictions",
      { cancelled: false, stopReason: "end_turn", agentError: null, timeout: null },
      true,
      true,
    ],
    [
      "an error the agent answered: its records alone",
      { cancelled: false, stopReason: null, agentError: ERR, timeout: null },
      true,
      false,
    ],
    [
      "the agent died mid-turn: none",
      { cancelled: false, stopReason: null, agentError: ERR, diedMidTurn: true, timeout: null },
      false,
      false,
    ],
    [
      "another stop reason: none",
      { cancelled: false, stopReason: "max_tokens", agentError: null, timeout: null },
      false,
      false,
    ],
    [
      "cancelled: none",
      { cancelled: true, stopReason: "end_turn", agentError: null, timeout: null },
      false,
      false,
    ],
    [
      "an error of a cancelled turn: none",
      { cancelled: true, stopReason: null, agentError: ERR, timeout: null },
      false,
      false,
    ],
    [
      "the silence timeout: none",
      { cancelled: false, stopReason: null, agentError: null, timeout: TIMEOUT },
      false,
      false,
    ],
  ];
  for (const [name, facts, records, contradictions] of rows) {
    test(name, () => {
      expect(evidenceBeyondWire(facts)).toEqual({ records, contradictions });
    });
  }
});
