/**
 * The OpenTelemetry side of turn export: tracer and logger providers with OTLP/HTTP
 * exporters (protobuf or JSON, lib/telemetry/settings.ts) behind bounded batch queues and
 * the sink (lib/telemetry/sink.ts). Only lib/telemetry/export.ts imports this module,
 * dynamically, when export is configured: `run` without telemetry never loads the SDK.
 *
 * Each turn is one trace: its `invoke_agent AGENT` span (kind CLIENT) is the root, with the
 * turn's final status; each attempt is a child span `attempt AGENT`, sent when the attempt
 * ends; the turn's span ends, and its one log record is emitted in its context, when the
 * last attempt ended (no retry follows, or the retry was stopped). Each attempt the agent
 * itself made and saw fail (Outcome.agentAttempts) is an event `turnguard.agent_attempt` at
 * the time it was observed: a span event on the turn's span when traces are exported, and a
 * log-based event in the turn span's context when logs are — the form OpenTelemetry moves
 * events to (OTEP 4430, open-telemetry/opentelemetry-specification
 * oteps/4430-span-event-deprecation-plan.md: events as log records, span events kept for
 * backends that read only traces).
 */
import {
  type AnyValue,
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  SeverityNumber,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { OTLPLogExporter as JsonLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPLogExporter as ProtobufLogExporter } from "@opentelemetry/exporter-logs-otlp-proto";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchLogRecordProcessor,
  LoggerProvider,
  type LogRecordExporter,
  type ReadableLogRecord,
} from "@opentelemetry/sdk-logs";
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { Outcome } from "../core/outcome.ts";
import {
  agentAttemptEvents,
  attemptRecord,
  type TurnContext,
  type TurnRecord,
  turnRecord,
  turnStartAttributes,
  UNKNOWN_PROVIDER,
} from "./record.ts";
import { type ExportCounts, logView, sinkExporter, spanView } from "./sink.ts";
import type { Protocol, SignalTarget, TelemetrySettings } from "./settings.ts";

/** The instrumentation scope of everything turnguard exports. */
const SCOPE = "turnguard";
/** Turns kept open (their retry may still come) at most; the oldest is ended first. */
const OPEN_TURNS = 1024;
/** How long a background export may take before it is abandoned. */
const EXPORT_TIMEOUT_MS = 10_000;

/** One attempt's end, as the turn recorder tells it (lib/retry/turn_recorder.ts). */
export interface AttemptEnd {
  /** The turn's session: the ACP session (proxy) or the run's journal session. */
  session: string;
  turn: number;
  /** 0 for the first attempt, n for the n-th retry. */
  attempt: number;
  /** No retry follows: the turn's span ends with this attempt's status. */
  final: boolean;
}

/** A turn whose last attempt has not ended yet. */
interface OpenTurn {
  /** Its `invoke_agent` span; null when only logs are exported. */
  span: Span | null;
  startMs: number;
  attempts: number;
  last: { outcome: Outcome; ctx: TurnContext };
}

/** The OTLP/HTTP exporters of each protocol. */
const EXPORTERS = {
  "http/protobuf": { spans: ProtobufTraceExporter, logs: ProtobufLogExporter },
  "http/json": { spans: JsonTraceExporter, logs: JsonLogExporter },
} as const satisfies Record<Protocol, unknown>;

/** Turns attempts into spans and log records and sends them; see the module comment. */
export class OtelExport {
  readonly counts: ExportCounts = { accepted: 0, exported: 0, firstError: null };
  readonly #settings: TelemetrySettings;
  readonly #name: string;
  readonly #tracer: TracerProvider | null;
  readonly #logger: LoggerProvider | null;
  /** Turns with a retry to come, by session and turn number (insertion order: oldest first). */
  readonly #open = new Map<string, OpenTurn>();
  /**
   * The last OPEN_TURNS turns that ended: their span's context and start, for a revision
   * of their Outcome (insertion order: oldest first).
   */
  readonly #ended = new Map<string, { context: Context; startMs: number; attempts: number }>();

  /** `dropped` is told of every export that failed (its records are lost), with why. */
  constructor(
    settings: TelemetrySettings,
    name: string,
    dropped: (why: string) => void,
  ) {
    this.#settings = settings;
    this.#name = name;
    const resource = resourceFromAttributes(settings.resource);
    const batch = {
      maxQueueSize: settings.queueSize,
      maxExportBatchSize: Math.min(512, settings.queueSize),
      exportTimeoutMillis: EXPORT_TIMEOUT_MS,
    };
    const config = (target: SignalTarget) => ({
      url: target.url,
      headers: target.headers,
      timeoutMillis: EXPORT_TIMEOUT_MS,
      // No pooled socket outlives the process's last export.
      keepAlive: false,
    });
    const { traces, logs } = settings;
    this.#tracer = traces
      ? new TracerProvider({
        resource,
        spanProcessors: [
          new BatchSpanProcessor({
            ...batch,
            exporter: sinkExporter<ReadableSpan, SpanExporter>(
              new EXPORTERS[traces.protocol].spans(config(traces)),
              spanView,
              this.counts,
              dropped,
            ),
          }),
        ],
      })
      : null;
    this.#logger = logs
      ? new LoggerProvider({
        resource,
        processors: [
          new BatchLogRecordProcessor({
            ...batch,
            exporter: sinkExporter<ReadableLogRecord, LogRecordExporter>(
              new EXPORTERS[logs.protocol].logs(config(logs)),
              logView,
              this.counts,
              dropped,
            ),
          }),
        ],
      })
      : null;
  }

  /**
   * One attempt ended: its span is sent now (the turn's span is started with the first);
   * a final one ends the turn. Synchronous and cheap.
   */
  attemptEnded(outcome: Outcome, end: AttemptEnd): void {
    const key = `${end.session}\n${end.turn}`;
    const ctx = this.#context(outcome, end.session, end.attempt);
    let open = this.#open.get(key);
    if (!open) {
      open = this.#startTurn(outcome, ctx);
      this.#open.set(key, open);
      if (this.#open.size > OPEN_TURNS) {
        const [oldestKey, oldest] = this.#open.entries().next().value!;
        this.#endTurn(oldestKey, oldest);
      }
    }
    open.attempts++;
    open.last = { outcome, ctx };
    this.#agentAttempts(outcome, open.span);
    const tracer = this.#tracer?.getTracer(SCOPE);
    if (tracer && open.span) {
      const rec = attemptRecord(outcome, ctx);
      const span = tracer.startSpan(rec.spanName, {
        kind: SpanKind.INTERNAL,
        startTime: rec.startMs,
        attributes: rec.attributes,
      }, trace.setSpan(ROOT_CONTEXT, open.span));
      if (rec.error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: rec.error });
      span.end(rec.endMs);
      this.counts.accepted++;
    }
    if (end.final) this.#endTurn(key, open);
  }

  /**
   * The agent's own failed attempts of one Outcome: span events on the turn's span, and
   * log-based events in its context (see the module comment).
   */
  #agentAttempts(outcome: Outcome, span: Span | null): void {
    const events = agentAttemptEvents(outcome);
    if (events.length === 0) return;
    if (span) { for (const e of events) span.addEvent(e.name, e.attributes, e.timeMs); }
    if (!this.#logger) return;
    const logger = this.#logger.getLogger(SCOPE);
    const context = span ? trace.setSpan(ROOT_CONTEXT, span) : ROOT_CONTEXT;
    for (const e of events) {
      logger.emit({
        eventName: e.name,
        timestamp: e.timeMs,
        severityNumber: SeverityNumber.WARN,
        severityText: "WARN",
        attributes: e.attributes as Attributes,
        context,
      });
      this.counts.accepted++;
    }
  }

  /** What an attempt's or turn's records say besides its Outcome. */
  #context(outcome: Outcome, session: string, attempt: number): TurnContext {
    return {
      conversationId: outcome.session ?? session,
      attempt,
      name: this.#name,
      provider: this.#settings.providers[outcome.agent] ?? UNKNOWN_PROVIDER,
      includeReply: this.#settings.includeReply,
    };
  }

  /** The retry that would have followed the turn's last attempt will not run: it ends. */
  retryStopped(session: string, turn: number): void {
    const key = `${session}\n${turn}`;
    const open = this.#open.get(key);
    if (open) this.#endTurn(key, open);
  }

  #startTurn(outcome: Outcome, ctx: TurnContext): OpenTurn {
    const startMs = Date.parse(outcome.startedAt);
    const span = this.#tracer?.getTracer(SCOPE).startSpan(`invoke_agent ${outcome.agent}`, {
      kind: SpanKind.CLIENT,
      startTime: startMs,
      attributes: turnStartAttributes(outcome.agent, ctx),
    }, ROOT_CONTEXT) ?? null;
    return { span, startMs, attempts: 0, last: { outcome, ctx } };
  }

  /** The turn's span ends with its last attempt's status; its log record follows. */
  #endTurn(key: string, open: OpenTurn): void {
    this.#open.delete(key);
    const { outcome, ctx } = open.last;
    const rec = turnRecord(outcome, ctx, { startMs: open.startMs, attempts: open.attempts });
    let context = ROOT_CONTEXT;
    if (open.span) {
      open.span.setAttributes(rec.attributes);
      if (rec.error !== null) {
        open.span.setStatus({ code: SpanStatusCode.ERROR, message: rec.error });
      }
      open.span.end(rec.endMs);
      this.counts.accepted++;
      context = trace.setSpan(ROOT_CONTEXT, open.span);
    }
    this.#ended.delete(key);
    this.#ended.set(key, { context, startMs: open.startMs, attempts: open.attempts });
    if (this.#ended.size > OPEN_TURNS) this.#ended.delete(this.#ended.keys().next().value!);
    this.#turnLog("turnguard.turn", rec, context);
  }

  /**
   * A turn's Outcome was revised after it ended (lib/proxy/finish.ts): its log record
   * `turnguard.turn.revised`, with the revised Outcome and `turnguard.revision`, in the
   * turn span's context while it is among the last OPEN_TURNS turns (else none). Its span
   * is not sent again: it ended.
   */
  turnRevised(outcome: Outcome): void {
    const key = `${outcome.session}\n${outcome.turn}`;
    const ended = this.#ended.get(key);
    const ctx = this.#context(outcome, "", 0);
    const rec = turnRecord(outcome, ctx, {
      startMs: ended?.startMs ?? Date.parse(outcome.startedAt),
      attempts: ended?.attempts ?? 1,
    });
    rec.attributes["turnguard.revision"] = outcome.revision ?? 1;
    this.#turnLog("turnguard.turn.revised", rec, ended?.context ?? ROOT_CONTEXT);
  }

  /** A turn's log record (the turn's end, or a revision of it). */
  #turnLog(eventName: string, rec: TurnRecord, context: Context): void {
    if (!this.#logger) return;
    this.#logger.getLogger(SCOPE).emit({
      eventName,
      timestamp: rec.endMs,
      severityNumber: SeverityNumber[rec.severity],
      severityText: rec.severity,
      body: rec.body as AnyValue,
      attributes: rec.attributes as Attributes,
      context,
    });
    this.counts.accepted++;
  }

  /** Ends the turns still open (their last attempt is final) and sends what is queued. */
  async close(): Promise<void> {
    for (const [key, open] of [...this.#open]) this.#endTurn(key, open);
    await Promise.allSettled([this.#tracer?.shutdown(), this.#logger?.shutdown()]);
  }
}
