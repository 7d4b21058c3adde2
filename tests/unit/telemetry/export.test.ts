/**
 * Turn export against a real loopback OTLP receiver, over http/protobuf (decoded with the
 * protocol's own field numbers, tests/helpers/otlp_protobuf.ts) and http/json: one
 * `invoke_agent` span per turn whose status is the turn's final one, each attempt a child
 * span, one log record per turn in the turn span's context; `gen_ai.provider.name` on
 * every span; and the sink: a secret in any field the agent chooses never leaves, control
 * characters are made visible, a lone surrogate does not make a collector refuse a batch.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Outcome } from "../../../lib/core/outcome.ts";
import { openTelemetry, type TurnTelemetry } from "../../../lib/telemetry/export.ts";
import { PROTOCOLS } from "../../../lib/telemetry/settings.ts";
import { type Receiver, startReceiver } from "../../helpers/otlp_receiver.ts";
import { capacityError, testOutcome } from "../../helpers/outcome.ts";

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

/** A receiver, and telemetry that exports to it over `protocol`. */
async function exportTo(
  protocol: string,
  table: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Promise<{ r: Receiver; telemetry: TurnTelemetry; warnings: string[] }> {
  const r = await startReceiver();
  receivers.push(r);
  const warnings: string[] = [];
  const telemetry = openTelemetry({
    table: { flush_timeout_ms: 10_000, ...table },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, ...env },
    name: "w1",
    warn: (line) => warnings.push(line),
  });
  if (telemetry === null) throw new Error("export is off");
  return { r, telemetry, warnings };
}

/** An attempt of turn 1 of session `s1`, `ms` after a fixed start. */
function attempt(status: Outcome["status"], ms: number, over: Partial<Outcome> = {}): Outcome {
  const at = (d: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, 0, ms + d)).toISOString();
  return testOutcome(status, status === "ok" ? "the answer" : "", {
    mode: "proxy",
    agent: "claude",
    session: "s1",
    startedAt: at(0),
    endedAt: at(100),
    stopReason: "end_turn",
    ...over,
  });
}

const end = (attemptNo: number, final: boolean) => ({
  session: "s1",
  turn: 1,
  attempt: attemptNo,
  final,
});

for (const protocol of PROTOCOLS) {
  describe(`over ${protocol}`, () => {
    test("a turn that succeeds on retry: one OK turn span, the attempts its children", async () => {
      const { r, telemetry, warnings } = await exportTo(protocol);
      telemetry.attemptEnded(attempt("failed", 0), end(0, false));
      telemetry.attemptEnded(attempt("ok", 2000), end(1, true));
      await telemetry.close();
      expect(warnings).toEqual([]);
      expect(r.rejected).toEqual([]);
      const contentType = protocol === "http/json" ? "application/json" : "application/x-protobuf";
      expect(r.requests.map((q) => q.headers["content-type"])).toEqual([
        contentType,
        contentType,
      ]);
      const turns = r.spans.filter((s) => s.name === "invoke_agent claude");
      const attempts = r.spans.filter((s) => s.name === "attempt claude")
        .sort((a, b) => a.startMs - b.startMs);
      expect([turns.length, attempts.length, r.spans.length]).toEqual([1, 2, 3]);
      const [turn] = turns;
      expect(turn.parentSpanId).toBe("");
      expect(turn.kind).toBe(3); // CLIENT
      expect(turn.status.code ?? 0).toBe(0); // not ERROR: the turn recovered
      expect(turn.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "claude",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.conversation.id": "s1",
        "turnguard.status": "ok",
        "turnguard.attempt": 1,
        "turnguard.attempts": 2,
      });
      expect([turn.startMs, turn.endMs]).toEqual([attempts[0].startMs, attempts[1].endMs]);
      for (const a of attempts) {
        expect([a.traceId, a.parentSpanId, a.kind]).toEqual([turn.traceId, turn.spanId, 1]);
        expect(a.attributes["gen_ai.provider.name"]).toBe("anthropic");
        expect(a.attributes["gen_ai.operation.name"]).toBeUndefined();
      }
      expect(attempts.map((a) => [a.attributes["turnguard.attempt"], a.status.code ?? 0]))
        .toEqual([[0, 2], [1, 0]]);
      expect(attempts[0].status.message).toBe("capacity: UNAVAILABLE (code 503)");
      expect(attempts[0].attributes["error.type"]).toBe("capacity");
      // One log record per turn, the final Outcome, in the turn span's context.
      expect(r.logs).toHaveLength(1);
      const [log] = r.logs;
      expect([log.traceId, log.spanId]).toEqual([turn.traceId, turn.spanId]);
      expect([log.eventName, log.severityText, log.severityNumber]).toEqual([
        "turnguard.turn",
        "INFO",
        9,
      ]);
      expect(log.attributes).toEqual(turn.attributes);
      expect(log.body).toMatchObject({ status: "ok", agent: "claude", reply: { chars: 10 } });
    });

    test("a retry that is stopped: the turn ends with the failed attempt, ERROR", async () => {
      const { r, telemetry } = await exportTo(protocol);
      telemetry.attemptEnded(attempt("failed", 0), end(0, false));
      telemetry.retryStopped("s1", 1);
      // A turn of another session still waits for its retry when the process ends.
      telemetry.attemptEnded(attempt("failed", 0, { session: "s2" }), {
        ...end(0, false),
        session: "s2",
      });
      await telemetry.close();
      const turns = r.spans.filter((s) => s.name.startsWith("invoke_agent"));
      expect(turns.map((t) => [t.attributes["gen_ai.conversation.id"], t.status.code]).sort())
        .toEqual([["s1", 2], ["s2", 2]]);
      expect(turns[0].status.message).toBe("capacity: UNAVAILABLE (code 503)");
      expect(turns.map((t) => t.attributes["turnguard.attempts"])).toEqual([1, 1]);
      expect(r.logs.map((l) => l.severityText)).toEqual(["ERROR", "ERROR"]);
    });

    test("a revised Outcome: a turnguard.turn.revised log record in the turn span's context", async () => {
      const { r, telemetry } = await exportTo(protocol);
      telemetry.attemptEnded(attempt("truncated", 0), end(0, true));
      telemetry.turnRevised({ ...attempt("ok", 0), revision: 1 });
      // A turn no longer (or never) known: the record still goes, in no span's context.
      telemetry.turnRevised({ ...attempt("ok", 0, { session: "gone" }), revision: 2 });
      await telemetry.close();
      expect(r.rejected).toEqual([]);
      const [turn] = r.spans.filter((s) => s.name === "invoke_agent claude");
      // The turn's span is not sent again: it ended as first recorded.
      expect(r.spans.filter((s) => s.name === "invoke_agent claude")).toHaveLength(1);
      const revised = r.logs.filter((l) => l.eventName === "turnguard.turn.revised");
      expect(revised.map((l) => [l.attributes["turnguard.revision"], l.severityText])).toEqual([
        [1, "INFO"],
        [2, "INFO"],
      ]);
      expect([revised[0].traceId, revised[0].spanId]).toEqual([turn.traceId, turn.spanId]);
      expect(revised[1].spanId).toBe("");
      expect(revised[0].attributes["gen_ai.conversation.id"]).toBe("s1");
      expect(r.logs.filter((l) => l.eventName === "turnguard.turn")).toHaveLength(1);
    });

    test("an agent with no known provider: the documented _OTHER", async () => {
      const { r, telemetry } = await exportTo(protocol, { providers: { mine: "x_ai" } });
      telemetry.attemptEnded(attempt("ok", 0, { agent: "custom" }), end(0, true));
      telemetry.attemptEnded(attempt("ok", 0, { agent: "mine", session: "s2" }), {
        ...end(0, true),
        session: "s2",
      });
      await telemetry.close();
      const provider = (name: string) =>
        r.spans.filter((s) => s.name.endsWith(name)).map((s) => [
          s.attributes["gen_ai.provider.name"],
          s.attributes["gen_ai.system"],
        ]);
      expect(provider(" custom")).toEqual([["_OTHER", undefined], ["_OTHER", undefined]]);
      expect(provider(" mine")).toEqual([["x_ai", "x_ai"], ["x_ai", "x_ai"]]);
    });

    test("the agent's own attempts: one event each on the turn span, at its time", async () => {
      const { r, telemetry } = await exportTo(protocol);
      const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, 0, ms)).toISOString();
      const source = { kind: "records" as const, path: "/home/u/.qwen/chats/s1.jsonl" };
      const agentAttempts = [
        {
          n: 1,
          at: at(20),
          cause:
            "429 You exceeded your current quota, key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
          category: "quota" as const,
          code: 429,
          retryable: false,
          nextInMs: 8000,
          source,
        },
        {
          n: 2,
          at: at(60),
          cause: "429 You exceeded your current quota",
          category: "quota" as const,
          retryable: false,
          source,
        },
      ];
      // The first attempt of the turn had them; its retry (with none) succeeded. Only the
      // first and the newest are kept in an Outcome: the count is the latest's number.
      agentAttempts[1].n = 7;
      telemetry.attemptEnded(attempt("failed", 0, { agentAttempts }), end(0, false));
      telemetry.attemptEnded(attempt("ok", 2000), end(1, true));
      await telemetry.close();
      expect(r.rejected).toEqual([]);
      const [turn] = r.spans.filter((s) => s.name === "invoke_agent claude");
      const attempts = r.spans.filter((s) => s.name === "attempt claude");
      expect(turn.events.map((e) => [e.name, e.timeMs])).toEqual([
        ["turnguard.agent_attempt", Date.parse(at(20))],
        ["turnguard.agent_attempt", Date.parse(at(60))],
      ]);
      expect(turn.events[0].attributes).toEqual({
        "error.type": "quota",
        "turnguard.agent_attempt.number": 1,
        "turnguard.agent_attempt.cause":
          "429 You exceeded your current quota, key [REDACTED:anthropic]",
        "turnguard.agent_attempt.code": "429",
        "turnguard.agent_attempt.retryable": false,
        "turnguard.agent_attempt.next_in_ms": 8000,
        "turnguard.agent_attempt.source": "records",
      });
      expect(turn.events[1].attributes["turnguard.agent_attempt.next_in_ms"]).toBeUndefined();
      expect(turn.events[1].attributes["turnguard.agent_attempt.code"]).toBeUndefined();
      // The attempt that saw them counts them; the events are the turn span's only.
      expect(attempts.map((a) => [a.attributes["turnguard.agent_attempts"], a.events.length]))
        .toEqual(expect.arrayContaining([[7, 0], [undefined, 0]]));
      // The same events as log records: named, at their time, in the turn span's context.
      const events = r.logs.filter((l) => l.eventName === "turnguard.agent_attempt");
      // No body (an empty value in OTLP/JSON, absent in protobuf).
      const noBody = (l: (typeof events)[number]) => l.body ?? null;
      expect(events.map((l) => [l.timeMs, l.severityText, l.severityNumber, noBody(l)])).toEqual([
        [Date.parse(at(20)), "WARN", 13, null],
        [Date.parse(at(60)), "WARN", 13, null],
      ]);
      for (const l of events) expect([l.traceId, l.spanId]).toEqual([turn.traceId, turn.spanId]);
      expect(events[0].attributes).toEqual(turn.events[0].attributes);
      expect(r.logs.filter((l) => l.eventName === "turnguard.turn")).toHaveLength(1);
    });

    test("the sink: a key in any agent-chosen field never leaves turnguard", async () => {
      const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123";
      const { r, telemetry } = await exportTo(protocol, { include_reply: true }, {
        OTEL_RESOURCE_ATTRIBUTES: `host.note=token%3D${key}`,
      });
      const outcome = attempt("failed", 0, {
        agent: `bot-${key}`,
        session: `sess-${key}`,
        stopReason: `stop ${key}`,
        exit: { code: 0, signal: `SIG-${key}` },
        error: { ...capacityError(`quota for ${key}`), code: `E-${key}`, anchor: `a-${key}` },
        retry: { retryable: true, reason: `wait ${key}`, afterMs: 1, at: null },
        reply: { chars: 3, text: `reply ${key}` },
        publish: {
          armed: true,
          detected: false,
          detector: `d-${key}`,
          channel: `#c-${key}`,
          fallback: { sent: false, exitCode: 1, stderr: `err ${key}` },
        },
        diagnostics: [
          `diag ${key}`,
          "bell \x07 and \x1b[31mred\x1b[0m and \u202Eevil",
          "lone \uD800",
        ],
      });
      telemetry.attemptEnded(outcome, { ...end(0, true), session: `sess-${key}` });
      await telemetry.close();
      expect(r.rejected).toEqual([]);
      expect(r.spans).toHaveLength(2);
      expect(r.logs).toHaveLength(1);
      const all = r.raw.join("\n");
      expect(all).not.toContain("abcdefghijklmnopqrstuvwxyz0123");
      expect(all).toContain("[REDACTED:anthropic]");
      // Each field went through the sink: redacted where it was, not dropped.
      const [turn] = r.spans.filter((s) => s.name.startsWith("invoke_agent"));
      expect(turn.name).toBe("invoke_agent bot-[REDACTED:anthropic]");
      expect(turn.attributes).toMatchObject({
        "gen_ai.conversation.id": "sess-[REDACTED:anthropic]",
        "turnguard.stop_reason": "stop [REDACTED:anthropic]",
        "gen_ai.response.finish_reasons": ["stop [REDACTED:anthropic]"],
        "turnguard.error.code": "E-[REDACTED:anthropic]",
        "turnguard.exit.signal": "SIG-[REDACTED:anthropic]",
        "turnguard.reply.text": "reply [REDACTED:anthropic]",
      });
      expect(turn.resource["host.note"]).toBe("token=[REDACTED:anthropic]");
      const body = r.logs[0].body as Outcome;
      expect(body.diagnostics).toEqual([
        "diag [REDACTED:anthropic]",
        "bell \\x07 and \\x1b[31mred\\x1b[0m and \\u202eevil",
        "lone \uFFFD",
      ]);
      expect(body.publish?.fallback?.stderr).toBe("err [REDACTED:anthropic]");
      expect(body.retry?.reason).toBe("wait [REDACTED:anthropic]");
    });
  });
}

describe("protocols", () => {
  test("grpc is one line, once, and nothing is sent", () => {
    const warnings: string[] = [];
    const telemetry = openTelemetry({
      table: null,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      },
      name: "w1",
      warn: (line) => warnings.push(line),
    });
    expect(telemetry).toBeNull();
    expect(warnings).toEqual([
      'turnguard: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported (only ' +
      "http/protobuf and http/json); nothing is exported over it",
    ]);
  });
});
