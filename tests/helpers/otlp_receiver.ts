/**
 * A local OTLP/HTTP receiver for the telemetry tests: a small HTTP server on 127.0.0.1 that
 * decodes what the exporters send to /v1/traces and /v1/logs, OTLP/JSON or OTLP protobuf
 * (by Content-Type; protobuf with tests/helpers/otlp_protobuf.ts), and answers 400 to a
 * body it cannot decode, as a collector does. `mode: "silent"` accepts connections and
 * requests and never answers (a collector that hangs).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeLogs, decodeTraces } from "./otlp_protobuf.ts";

/** An OTLP AnyValue as JSON carries it. */
type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: Array<{ key: string; value: AnyValue }> };
};
type KeyValue = { key: string; value: AnyValue };

/** An AnyValue as a plain JS value (integers as numbers). */
export function plain(v: AnyValue | undefined): unknown {
  if (v === undefined) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(plain);
  if (v.kvlistValue) return attrs(v.kvlistValue.values);
  return null;
}

/** OTLP attributes as a plain object. */
export function attrs(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

/** One received span, decoded. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>;
  events: Array<{ timeMs: number; name: string; attributes: Record<string, unknown> }>;
  resource: Record<string, unknown>;
}

/** One received log record, decoded. */
export interface ReceivedLog {
  traceId: string;
  spanId: string;
  eventName: string;
  timeMs: number;
  severityText: string;
  severityNumber: number;
  body: unknown;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

/** A running receiver. */
export interface Receiver {
  url: string;
  spans: ReceivedSpan[];
  logs: ReceivedLog[];
  /** Raw request bodies (protobuf read as Latin-1), for "this text is nowhere" checks. */
  raw: string[];
  /** Requests by path, with their headers. */
  requests: Array<{ path: string; headers: IncomingMessage["headers"] }>;
  /** Bodies that could not be decoded (answered 400), with why. */
  rejected: string[];
  close(): Promise<void>;
}

const ms = (nanos: string | number | undefined) => Number(BigInt(nanos ?? 0) / 1_000_000n);

/** Starts a receiver on 127.0.0.1 (a free port). */
export async function startReceiver(mode: "ok" | "silent" = "ok"): Promise<Receiver> {
  const held: ServerResponse[] = [];
  const r: Omit<Receiver, "url" | "close"> = {
    spans: [],
    logs: [],
    raw: [],
    requests: [],
    rejected: [],
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "";
      r.requests.push({ path, headers: req.headers });
      if (mode === "silent") {
        held.push(res);
        return;
      }
      const body = Buffer.concat(chunks);
      const protobuf = req.headers["content-type"] === "application/x-protobuf";
      r.raw.push(body.toString(protobuf ? "latin1" : "utf8"));
      try {
        const bytes = new Uint8Array(body);
        const msg = !protobuf
          ? JSON.parse(body.toString("utf8"))
          : path === "/v1/traces"
          ? decodeTraces(bytes)
          : decodeLogs(bytes);
        ingest(path, msg, r);
      } catch (err) {
        r.rejected.push(String(err));
        res.writeHead(400).end();
        return;
      }
      // An empty Export…ServiceResponse: no partial success to report, in either encoding.
      if (protobuf) res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      else res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    ...r,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((done) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => done());
      }),
  } as Receiver;
}

// deno-lint-ignore no-explicit-any
type Json = any;

function ingest(path: string, msg: Json, r: Omit<Receiver, "url" | "close">): void {
  if (path === "/v1/traces") {
    for (const rs of msg.resourceSpans ?? []) {
      const resource = attrs(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          r.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? "",
            events: (s.events ?? []).map((e: Json) => ({
              timeMs: ms(e.timeUnixNano),
              name: e.name,
              attributes: attrs(e.attributes),
            })),
            name: s.name,
            kind: s.kind,
            startMs: ms(s.startTimeUnixNano),
            endMs: ms(s.endTimeUnixNano),
            status: s.status ?? {},
            attributes: attrs(s.attributes),
            links: (s.links ?? []).map((l: Json) => ({
              traceId: l.traceId,
              spanId: l.spanId,
              attributes: attrs(l.attributes),
            })),
            resource,
          });
        }
      }
    }
  } else if (path === "/v1/logs") {
    for (const rl of msg.resourceLogs ?? []) {
      const resource = attrs(rl.resource?.attributes);
      for (const sl of rl.scopeLogs ?? []) {
        for (const l of sl.logRecords ?? []) {
          r.logs.push({
            traceId: l.traceId ?? "",
            spanId: l.spanId ?? "",
            eventName: l.eventName ?? "",
            timeMs: ms(l.timeUnixNano),
            severityText: l.severityText ?? "",
            severityNumber: l.severityNumber ?? 0,
            body: plain(l.body),
            attributes: attrs(l.attributes),
            resource,
          });
        }
      }
    }
  }
}
