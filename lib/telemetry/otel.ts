/**
 * The OpenTelemetry side of turn export: tracer and logger providers with OTLP/HTTP (JSON)
 * exporters behind bounded batch queues. Only lib/telemetry/export.ts imports this module,
 * dynamically, when export is configured: `run` without telemetry never loads the SDK.
 *
 * Each turn is one span (`invoke_agent AGENT`) and one log record in the span's context.
 * A retry's span links to the attempt it retries. Proxy turns are children of one span per
 * ACP session, so a session is one trace.
 */
import {
  type Attributes,
  type Link,
  ROOT_CONTEXT,
  SeverityNumber,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
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
import type { AnyValue } from "@opentelemetry/api";
import type { Outcome } from "../core/outcome.ts";
import { turnRecord } from "./record.ts";
import type { TelemetrySettings } from "./settings.ts";

/** The instrumentation scope of everything turnguard exports. */
const SCOPE = "turnguard";
/** Turns remembered for retry links, and sessions kept open, at most. */
const REMEMBERED = 1024;
/** How long a background export may take before it is abandoned. */
const EXPORT_TIMEOUT_MS = 10_000;
/** ExportResultCode.SUCCESS of @opentelemetry/core. */
const SUCCESS = 0;

/** What became of the records handed to the exporter. */
export interface ExportCounts {
  /** Records (spans and log records) handed to the SDK. */
  accepted: number;
  /** Records the collector acknowledged. */
  exported: number;
  /** The first export error, for the one line that says records were dropped. */
  firstError: string | null;
}

type ExportCallback = (result: { code: number; error?: Error }) => void;

/**
 * An exporter wrapped to count what the collector acknowledged; `dropped` is told of each
 * export that failed.
 */
function counted<T, E extends { export(items: T[], done: ExportCallback): void }>(
  inner: E,
  counts: ExportCounts,
  dropped: (why: string) => void,
): E {
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key !== "export") return Reflect.get(target, key, receiver);
      return (items: T[], done: ExportCallback) =>
        target.export(items, (result) => {
          if (result.code === SUCCESS) counts.exported += items.length;
          else {
            counts.firstError ??= result.error?.message ?? "export failed";
            dropped(counts.firstError);
          }
          done(result);
        });
    },
  });
}

/** What the exporter is told about each turn besides its Outcome. */
export interface TurnMeta {
  /** The session the turn belongs to when the Outcome has none (`run`). */
  conversationId: string | null;
}

/** Turns Outcomes into spans and log records and sends them; see the module comment. */
export class OtelExport {
  readonly counts: ExportCounts = { accepted: 0, exported: 0, firstError: null };
  readonly #settings: TelemetrySettings;
  readonly #name: string;
  readonly #tracer: TracerProvider | null;
  readonly #logger: LoggerProvider | null;
  /** The last attempt's span of each turn, for the link from its retry. */
  readonly #attempts = new Map<string, { span: SpanContext; attempt: number }>();
  /** The open span of each proxy session, parent of its turns' spans. */
  readonly #sessions = new Map<string, { span: Span; turns: number }>();

  /** `dropped` is told of every export that failed (its records are lost), with why. */
  constructor(settings: TelemetrySettings, name: string, dropped: (why: string) => void) {
    this.#settings = settings;
    this.#name = name;
    const resource = resourceFromAttributes(settings.resource);
    const batch = {
      maxQueueSize: settings.queueSize,
      maxExportBatchSize: Math.min(512, settings.queueSize),
      exportTimeoutMillis: EXPORT_TIMEOUT_MS,
    };
    const http = (target: { url: string; headers: Record<string, string> }) => ({
      url: target.url,
      headers: target.headers,
      timeoutMillis: EXPORT_TIMEOUT_MS,
      // No pooled socket outlives the process's last export.
      keepAlive: false,
    });
    this.#tracer = settings.traces
      ? new TracerProvider({
        resource,
        spanProcessors: [
          new BatchSpanProcessor({
            ...batch,
            exporter: counted<ReadableSpan, SpanExporter>(
              new OTLPTraceExporter(http(settings.traces)),
              this.counts,
              dropped,
            ),
          }),
        ],
      })
      : null;
    this.#logger = settings.logs
      ? new LoggerProvider({
        resource,
        processors: [
          new BatchLogRecordProcessor({
            ...batch,
            exporter: counted<ReadableLogRecord, LogRecordExporter>(
              new OTLPLogExporter(http(settings.logs)),
              this.counts,
              dropped,
            ),
          }),
        ],
      })
      : null;
  }

  /** Exports one turn's Outcome: its span and its log record. Synchronous and cheap. */
  record(outcome: Outcome, meta: TurnMeta): void {
    const conversationId = outcome.session ?? meta.conversationId;
    const key = `${conversationId}\n${outcome.turn}`;
    const previous = this.#attempts.get(key);
    const attempt = previous ? previous.attempt + 1 : 0;
    const rec = turnRecord(outcome, {
      conversationId,
      attempt,
      name: this.#name,
      provider: this.#settings.providers[outcome.agent] ?? null,
      includeReply: this.#settings.includeReply,
    });
    const links: Link[] = previous
      ? [{ context: previous.span, attributes: { "turnguard.retry_of.attempt": previous.attempt } }]
      : [];
    let parent = ROOT_CONTEXT;
    const tracer = this.#tracer?.getTracer(SCOPE);
    if (tracer && outcome.mode === "proxy" && conversationId !== null) {
      const session = this.#session(tracer, conversationId, outcome, rec.startMs);
      session.turns++;
      parent = trace.setSpan(ROOT_CONTEXT, session.span);
    }
    let context = parent;
    if (tracer) {
      const span = tracer.startSpan(rec.spanName, {
        kind: SpanKind.CLIENT,
        startTime: rec.startMs,
        attributes: rec.attributes,
        links,
      }, parent);
      if (rec.error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: rec.error });
      span.end(rec.endMs);
      this.counts.accepted++;
      remember(this.#attempts, key, { span: span.spanContext(), attempt });
      context = trace.setSpan(parent, span);
    }
    if (this.#logger) {
      this.#logger.getLogger(SCOPE).emit({
        eventName: "turnguard.turn",
        timestamp: rec.endMs,
        severityNumber: SeverityNumber[rec.severity],
        severityText: rec.severity,
        body: rec.body as AnyValue,
        attributes: rec.attributes as Attributes,
        context,
      });
      this.counts.accepted++;
    }
  }

  /** The session's span, started with its first turn. */
  #session(
    tracer: Tracer,
    id: string,
    outcome: Outcome,
    startMs: number,
  ): { span: Span; turns: number } {
    const open = this.#sessions.get(id);
    if (open) return open;
    const span = tracer.startSpan(`session ${outcome.agent}`, {
      kind: SpanKind.INTERNAL,
      startTime: startMs,
      attributes: {
        "gen_ai.conversation.id": id,
        "gen_ai.agent.name": outcome.agent,
        "turnguard.agent": outcome.agent,
        "turnguard.name": this.#name,
        "turnguard.mode": outcome.mode,
      },
    }, ROOT_CONTEXT);
    const session = { span, turns: 0 };
    const evicted = remember(this.#sessions, id, session);
    if (evicted) this.#endSession(evicted);
    return session;
  }

  #endSession(session: { span: Span; turns: number }): void {
    session.span.setAttribute("turnguard.session.turns", session.turns);
    session.span.end();
    this.counts.accepted++;
  }

  /** Ends the open session spans and sends what is queued; the caller bounds the wait. */
  async close(): Promise<void> {
    for (const session of this.#sessions.values()) this.#endSession(session);
    this.#sessions.clear();
    await Promise.allSettled([this.#tracer?.shutdown(), this.#logger?.shutdown()]);
  }
}

/** Adds to a map kept to REMEMBERED entries; returns the entry pushed out, if any. */
function remember<K, V>(map: Map<K, V>, key: K, value: V): V | undefined {
  map.delete(key);
  map.set(key, value);
  if (map.size <= REMEMBERED) return undefined;
  const first = map.entries().next();
  if (first.done) return undefined;
  const [oldest, evicted] = first.value;
  map.delete(oldest);
  return evicted;
}
