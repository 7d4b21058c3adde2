/**
 * The telemetry sink: the one place where records leave turnguard for the collector. Every
 * span and log record is handed to the OTLP exporter through `sinkExporter`, which passes
 * every string in it — span name, status message, attribute values (arrays and nested maps
 * too), event and link attributes, the log record's body, severity text and event name, the
 * resource's attributes — through `exportedText`: capped, redacted, control characters made
 * visible, lone surrogates replaced. No field can be forgotten: what builds the records
 * (lib/telemetry/record.ts) redacts nothing itself.
 *
 * The SDK's records are not changed: the exporter sees a read-only view of each. Types only
 * are imported from the SDK, so this module loads nothing of it.
 */
import type { AnyValue, Attributes, AttributeValue, Link } from "@opentelemetry/api";
import type { ReadableLogRecord } from "@opentelemetry/sdk-logs";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace";
import { escapeControls } from "../text/control_chars.ts";
import { redact } from "../text/redact.ts";
import { capUtf8 } from "../text/text.ts";

/**
 * The most UTF-8 bytes of one exported string (the journal keeps as much of a reply): a
 * reply exported with `include_reply` cannot make a batch the collector refuses.
 */
export const EXPORTED_TEXT_BYTES = 64 * 1024;

/** A UTF-16 surrogate without its pair: protobuf's UTF-8 cannot carry it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * One string as it may leave turnguard: cut to EXPORTED_TEXT_BYTES (with `…`, so a key cut
 * short is still redacted whole), secrets redacted (lib/text/redact.ts, as in the journal),
 * terminal and bidirectional controls written as `\xHH` (lib/text/control_chars.ts), and a
 * lone surrogate replaced by U+FFFD (a collector rejects a protobuf batch with invalid UTF-8).
 */
export function exportedText(text: string): string {
  const capped = capUtf8(text, EXPORTED_TEXT_BYTES);
  const cut = capped === text ? text : `${capped}…`;
  return escapeControls(redact(cut)).replace(LONE_SURROGATE, "\uFFFD");
}

/** Any exported value, every string in it through `exportedText` (keys included). */
export function exportedValue<T>(value: T): T {
  return deep(value, 0) as T;
}

/** Nesting kept at most; deeper values are dropped (an Outcome nests four levels). */
const MAX_DEPTH = 16;

function deep(value: unknown, depth: number): unknown {
  if (typeof value === "string") return exportedText(value);
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return value;
  if (depth >= MAX_DEPTH) return null;
  if (Array.isArray(value)) return value.map((v) => deep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[exportedText(k)] = deep(v, depth + 1);
  return out;
}

function attributes(attrs: Attributes): Attributes {
  return exportedValue(attrs) as Record<string, AttributeValue | undefined>;
}

/** Resource views by resource, so that records keep grouping under one resource. */
const resources = new WeakMap<object, object>();

function resourceView<R extends { attributes: Attributes }>(resource: R): R {
  let view = resources.get(resource);
  if (!view) {
    view = new Proxy(resource, {
      get: (target, key, receiver) =>
        key === "attributes" ? attributes(target.attributes) : Reflect.get(target, key, receiver),
    });
    resources.set(resource, view);
  }
  return view as R;
}

/** A span as the exporter sees it: every string in it through `exportedText`. */
export function spanView(span: ReadableSpan): ReadableSpan {
  const name = exportedText(span.name);
  const status = span.status.message === undefined
    ? span.status
    : { ...span.status, message: exportedText(span.status.message) };
  const links: Link[] = span.links.map((l) =>
    l.attributes ? { ...l, attributes: attributes(l.attributes) } : l
  );
  const events: TimedEvent[] = span.events.map((e) => ({
    ...e,
    name: exportedText(e.name),
    ...(e.attributes ? { attributes: attributes(e.attributes) } : {}),
  }));
  const replaced: Partial<Record<keyof ReadableSpan, unknown>> = {
    name,
    status,
    links,
    events,
    attributes: attributes(span.attributes),
    resource: resourceView(span.resource),
  };
  return new Proxy(span, {
    get: (target, key, receiver) =>
      key in replaced ? replaced[key as keyof ReadableSpan] : Reflect.get(target, key, receiver),
  });
}

/** A log record as the exporter sees it: every string in it through `exportedText`. */
export function logView(record: ReadableLogRecord): ReadableLogRecord {
  const replaced: Partial<Record<keyof ReadableLogRecord, unknown>> = {
    body: record.body === undefined ? undefined : exportedValue(record.body as AnyValue),
    severityText: record.severityText === undefined ? undefined : exportedText(record.severityText),
    eventName: record.eventName === undefined ? undefined : exportedText(record.eventName),
    attributes: attributes(record.attributes),
    resource: resourceView(record.resource),
  };
  return new Proxy(record, {
    get: (target, key, receiver) =>
      key in replaced
        ? replaced[key as keyof ReadableLogRecord]
        : Reflect.get(target, key, receiver),
  });
}

/** What became of the records handed to the exporter. */
export interface ExportCounts {
  /** Records (spans and log records) handed to the SDK. */
  accepted: number;
  /** Records the collector acknowledged. */
  exported: number;
  /** The first export error, for the one line that says records were dropped. */
  firstError: string | null;
}

/** ExportResultCode.SUCCESS of @opentelemetry/core. */
const SUCCESS = 0;

type ExportCallback = (result: { code: number; error?: Error }) => void;

/**
 * An OTLP exporter behind the sink: each batch is handed over as views (`view`, i.e.
 * `spanView` or `logView`), and what the collector acknowledged is counted; `dropped` is
 * told of each export that failed.
 */
export function sinkExporter<T, E extends { export(items: T[], done: ExportCallback): void }>(
  inner: E,
  view: (item: T) => T,
  counts: ExportCounts,
  dropped: (why: string) => void,
): E {
  return new Proxy(inner, {
    get(target, key, receiver) {
      if (key !== "export") return Reflect.get(target, key, receiver);
      return (items: T[], done: ExportCallback) => {
        let views: T[];
        try {
          views = items.map(view);
        } catch (err) {
          // A record that cannot be made safe is not sent.
          const why = err instanceof Error ? err.message : String(err);
          counts.firstError ??= why;
          dropped(counts.firstError);
          return done({ code: 1, error: err instanceof Error ? err : new Error(why) });
        }
        target.export(views, (result) => {
          if (result.code === SUCCESS) counts.exported += items.length;
          else {
            counts.firstError ??= result.error?.message ?? "export failed";
            dropped(counts.firstError);
          }
          done(result);
        });
      };
    },
  });
}
