/**
 * `endTurn` (lib/proxy/turn_end.ts) without a running proxy: called with plain data (a
 * turn, how it ended, the agent's line), it returns what the client is sent and records
 * the Outcome, in one straight line: conclude → publish → retry decision → record → send
 * or hold. Every sink here writes to one event list, so the order is what is checked.
 */
import { describe, expect, test } from "bun:test";
import type { Outcome } from "../../../lib/core/outcome.ts";
import type { TurnEnd } from "../../../lib/proxy/conclude.ts";
import { endTurn, type RetryHold, type TurnEndSteps } from "../../../lib/proxy/turn_end.ts";
import { observeUpdate, type Turn } from "../../../lib/proxy/turns.ts";
import { publishSettings } from "../../../lib/publish/settings.ts";
import { TurnRecorder } from "../../../lib/retry/turn_recorder.ts";
import type { TurnTelemetry } from "../../../lib/telemetry/export.ts";
import { dec, enc, testClassifier, testTurn } from "../../helpers/units.ts";

const LIMITED = { code: 429, message: "Too many requests" };
const errorLine = enc(`{"jsonrpc":"2.0","id":7,"error":${JSON.stringify(LIMITED)}}\n`);
const errorEnd: TurnEnd = {
  kind: "error",
  error: LIMITED,
  response: { jsonrpc: "2.0", id: 7, error: LIMITED },
};
const okLine = enc('{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}\n');
const okEnd: TurnEnd = {
  kind: "result",
  result: { stopReason: "end_turn" },
  response: { jsonrpc: "2.0", id: 7, result: { stopReason: "end_turn" } },
};

/** Steps whose every sink says what it got in `events`, in order. */
function world(retries: number, publish = false) {
  const events: string[] = [];
  const outcomes: Outcome[] = [];
  const recorder = new TurnRecorder({
    journal: { append: (r) => void events.push(`journal ${r.event}`) },
    name: "n",
    policy: { retries, maxWaitMs: 300_000 },
    random: () => 0.5,
  });
  // Telemetry hears of attempts from the recorder, as the CLI wires it.
  const telemetry: TurnTelemetry = {
    attemptEnded: (o, end) =>
      void events.push(`telemetry ${o.status}${end.final ? "" : ", a retry follows"}`),
    retryStopped: () => void events.push("telemetry retry stopped"),
    turnRevised: (o) => void events.push(`telemetry revised ${o.status}`),
    close: () => Promise.resolve(),
  };
  recorder.exportTo(telemetry);
  const steps: TurnEndSteps = {
    recorder,
    onOutcome: (o) => void (events.push(`outcome file ${o.status}`), outcomes.push(o)),
    publish: publish
      ? {
        settings: publishSettings(undefined, true),
        detectors: [],
        vars: new Map([["channel", "c"], ["reply_to", "r"]]),
        run: (spec) => {
          events.push(`publish ${spec.stdin}`);
          return Promise.resolve({
            sent: true,
            exitCode: 0,
            signal: null,
            timedOut: false,
            stderr: "",
          });
        },
      }
      : null,
  };
  return { events, outcomes, steps };
}

/** A RetryHold that takes every retry (`gone` null) or none (why). */
function holder(events: string[], gone: string | null): RetryHold {
  return {
    hold: (turn, decision, response) => {
      events.push(`hold turn ${turn.turn} for retry ${decision.attempt}`);
      held.push(response);
      return gone;
    },
  };
}
const held: Array<Uint8Array | null> = [];

/** The error response the client is sent: the agent's, annotated with the Outcome. */
const annotated = (bytes: Uint8Array | null) => {
  const message = JSON.parse(dec(bytes ?? enc("null")));
  return [message.id, message.error.code, message.error.data.turnguard.category];
};

function input(turn: Turn, end: TurnEnd, line: Uint8Array) {
  return {
    conclude: {
      turn,
      end,
      agent: "fake",
      classifier: testClassifier(),
      endedAt: 5000,
      rewriteErrors: false,
      scanLogs: () => ({ cause: null, diagnostics: [] }),
    },
    line,
  };
}

describe("endTurn", () => {
  test("a clean turn: publish, then the journal, telemetry and the outcome file; the agent's line goes", async () => {
    const { events, outcomes, steps } = world(0, true);
    const turn = testTurn();
    observeUpdate(turn, {
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "the answer" },
    }, 2000);
    const ended = await endTurn(input(turn, okEnd, okLine), steps, holder(events, null));
    expect(ended.send).toBe(okLine);
    expect([ended.held, ended.retry, ended.outcome.status]).toEqual([
      false,
      { kind: "none" },
      "ok",
    ]);
    expect(ended.outcome.publish?.fallback).toEqual({ sent: true, exitCode: 0 });
    expect(events).toEqual([
      "publish the answer",
      "journal turn_ended",
      "telemetry ok",
      "outcome file ok",
    ]);
    expect(outcomes).toEqual([ended.outcome]);
  });

  test("a failure that may be retried: decided and journaled, then the response is held", async () => {
    const { events, steps } = world(1);
    const turn = testTurn();
    const ended = await endTurn(input(turn, errorEnd, errorLine), steps, holder(events, null));
    expect([ended.send, ended.held, ended.outcome.status]).toEqual([null, true, "failed"]);
    expect(annotated(held.at(-1) ?? null)).toEqual([7, 429, "rate_limit"]);
    expect(ended.retry).toMatchObject({ kind: "retry", attempt: 1, of: 1 });
    // The decision and the attempt's end are journaled before the response is held; an
    // attempt that is retried is no final Outcome (no outcome file).
    expect(events).toEqual([
      "journal retry_scheduled",
      "journal turn_ended",
      "telemetry failed, a retry follows",
      "hold turn 1 for retry 1",
    ]);
  });

  test("a retry that cannot wait is journaled as stopped and the client gets the failure", async () => {
    const { events, outcomes, steps } = world(1);
    const turn = testTurn();
    const ended = await endTurn(
      input(turn, errorEnd, errorLine),
      steps,
      holder(events, "the agent exited"),
    );
    expect([annotated(ended.send), ended.held]).toEqual([[7, 429, "rate_limit"], false]);
    expect(held.at(-1)).toBe(ended.send);
    expect(events).toEqual([
      "journal retry_scheduled",
      "journal turn_ended",
      "telemetry failed, a retry follows",
      "hold turn 1 for retry 1",
      "journal retry_settled",
      "telemetry retry stopped",
      "outcome file failed",
    ]);
    expect(outcomes.map((o) => o.error?.message)).toEqual([LIMITED.message]);
  });

  test("retries off: the failure is settled in the journal and sent as it is", async () => {
    const { events, steps } = world(0);
    const ended = await endTurn(
      input(testTurn(), errorEnd, errorLine),
      steps,
      holder(events, null),
    );
    expect([annotated(ended.send), ended.held, ended.retry.kind]).toEqual([
      [7, 429, "rate_limit"],
      false,
      "settled",
    ]);
    expect(events).toEqual([
      "journal retry_settled",
      "journal turn_ended",
      "telemetry failed",
      "outcome file failed",
    ]);
  });

  test("a response that already went unread is recorded, never published or held", async () => {
    const { events, steps } = world(1, true);
    const turn = testTurn();
    const ended = await endTurn(
      { ...input(turn, errorEnd, errorLine), line: null, unread: "it went unread" },
      steps,
      {
        hold: (
          _t,
          _d,
          _r,
          sent,
        ) => (events.push(`hold sent=${sent}`),
          sent ? "the agent's response already went to the client" : null),
      },
    );
    expect([ended.send, ended.held]).toEqual([null, false]);
    expect(ended.outcome.diagnostics.at(-1)).toBe("it went unread");
    expect(events).toEqual([
      "journal retry_scheduled",
      "journal turn_ended",
      "telemetry failed, a retry follows",
      "hold sent=true",
      "journal retry_settled",
      "telemetry retry stopped",
      "outcome file failed",
    ]);
  });
});
