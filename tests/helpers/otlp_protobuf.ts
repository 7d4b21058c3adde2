/**
 * A small OTLP protobuf decoder for the test receiver, written from the protocol's own
 * definitions (github.com/open-telemetry/opentelemetry-proto: opentelemetry/proto/trace/v1/
 * trace.proto, logs/v1/logs.proto, common/v1/common.proto, resource/v1/resource.proto),
 * independent of the exporter's encoder. It turns an ExportTraceServiceRequest or
 * ExportLogsServiceRequest into the shape OTLP/JSON gives the same data (ids as hex,
 * nanoseconds as strings, AnyValue as `{ stringValue }`…), so one reader serves both.
 * Strings must be valid UTF-8, as a collector's protobuf decoder demands.
 */

/** The fields of one message: field number → its values (varints as bigint, bytes raw). */
type Fields = Map<number, Array<bigint | Uint8Array>>;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Splits a message into its fields (wire types 0, 1, 2 and 5). */
function fields(buf: Uint8Array): Fields {
  const out: Fields = new Map();
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error("protobuf: truncated varint");
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const field = tag >>> 3;
    const wire = tag & 7;
    let value: bigint | Uint8Array;
    if (wire === 0) value = varint();
    else if (wire === 1) {
      value = view.getBigUint64(pos, true);
      pos += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      if (pos + len > buf.length) throw new Error("protobuf: truncated field");
      value = buf.subarray(pos, pos + len);
      pos += len;
    } else if (wire === 5) {
      value = BigInt(view.getUint32(pos, true));
      pos += 4;
    } else throw new Error(`protobuf: wire type ${wire} in field ${field}`);
    const list = out.get(field) ?? [];
    list.push(value);
    out.set(field, list);
  }
  return out;
}

const bytes = (f: Fields, n: number): Uint8Array[] => (f.get(n) ?? []) as Uint8Array[];
const one = (f: Fields, n: number): Uint8Array | undefined => bytes(f, n).at(-1);
const num = (f: Fields, n: number): bigint => (f.get(n)?.at(-1) as bigint | undefined) ?? 0n;
const str = (f: Fields, n: number): string => {
  const b = one(f, n);
  return b ? utf8.decode(b) : "";
};
const hex = (b: Uint8Array | undefined): string =>
  b ? [...b].map((x) => x.toString(16).padStart(2, "0")).join("") : "";

type Json = Record<string, unknown>;

/** common.proto AnyValue: string 1, bool 2, int 3, double 4, array 5, kvlist 6, bytes 7. */
function anyValue(buf: Uint8Array): Json {
  const f = fields(buf);
  if (f.has(1)) return { stringValue: str(f, 1) };
  if (f.has(2)) return { boolValue: num(f, 2) !== 0n };
  if (f.has(3)) return { intValue: String(BigInt.asIntN(64, num(f, 3))) };
  if (f.has(4)) {
    const d = new DataView(new ArrayBuffer(8));
    d.setBigUint64(0, num(f, 4), true);
    return { doubleValue: d.getFloat64(0, true) };
  }
  if (f.has(5)) return { arrayValue: { values: bytes(fields(one(f, 5)!), 1).map(anyValue) } };
  if (f.has(6)) return { kvlistValue: { values: bytes(fields(one(f, 6)!), 1).map(keyValue) } };
  if (f.has(7)) return { bytesValue: hex(one(f, 7)) };
  return {};
}

/** KeyValue: key 1, value 2. */
function keyValue(buf: Uint8Array): Json {
  const f = fields(buf);
  const v = one(f, 2);
  return { key: str(f, 1), value: v ? anyValue(v) : {} };
}

/** Resource: attributes 1. */
function resource(buf: Uint8Array | undefined): Json {
  return { attributes: buf ? bytes(fields(buf), 1).map(keyValue) : [] };
}

/**
 * Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8,
 * attributes 9, events 11 (time 1, name 2, attributes 3), links 13, status 15 (message 2,
 * code 3).
 */
function span(buf: Uint8Array): Json {
  const f = fields(buf);
  const status = one(f, 15);
  const s = status ? fields(status) : new Map();
  return {
    traceId: hex(one(f, 1)),
    spanId: hex(one(f, 2)),
    parentSpanId: hex(one(f, 4)),
    name: str(f, 5),
    kind: Number(num(f, 6)),
    startTimeUnixNano: String(num(f, 7)),
    endTimeUnixNano: String(num(f, 8)),
    attributes: bytes(f, 9).map(keyValue),
    events: bytes(f, 11).map((e) => {
      const ef = fields(e);
      return {
        timeUnixNano: String(num(ef, 1)),
        name: str(ef, 2),
        attributes: bytes(ef, 3).map(keyValue),
      };
    }),
    links: bytes(f, 13).map((l) => {
      const lf = fields(l);
      return {
        traceId: hex(one(lf, 1)),
        spanId: hex(one(lf, 2)),
        attributes: bytes(lf, 4).map(keyValue),
      };
    }),
    status: {
      ...(s.has(2) ? { message: str(s, 2) } : {}),
      ...(s.has(3) ? { code: Number(num(s, 3)) } : {}),
    },
  };
}

/**
 * LogRecord: time 1, severity_number 2, severity_text 3, body 5, attributes 6,
 * trace_id 9, span_id 10, event_name 12.
 */
function logRecord(buf: Uint8Array): Json {
  const f = fields(buf);
  const body = one(f, 5);
  return {
    timeUnixNano: String(num(f, 1)),
    severityNumber: Number(num(f, 2)),
    severityText: str(f, 3),
    ...(body ? { body: anyValue(body) } : {}),
    attributes: bytes(f, 6).map(keyValue),
    traceId: hex(one(f, 9)),
    spanId: hex(one(f, 10)),
    eventName: str(f, 12),
  };
}

/**
 * ExportTraceServiceRequest (resource_spans 1 → resource 1, scope_spans 2 → spans 2) as
 * OTLP/JSON.
 */
export function decodeTraces(buf: Uint8Array): Json {
  return {
    resourceSpans: bytes(fields(buf), 1).map((rs) => {
      const f = fields(rs);
      return {
        resource: resource(one(f, 1)),
        scopeSpans: bytes(f, 2).map((ss) => ({ spans: bytes(fields(ss), 2).map(span) })),
      };
    }),
  };
}

/**
 * ExportLogsServiceRequest (resource_logs 1 → resource 1, scope_logs 2 → log_records 2) as
 * OTLP/JSON.
 */
export function decodeLogs(buf: Uint8Array): Json {
  return {
    resourceLogs: bytes(fields(buf), 1).map((rl) => {
      const f = fields(rl);
      return {
        resource: resource(one(f, 1)),
        scopeLogs: bytes(f, 2).map((sl) => ({
          logRecords: bytes(fields(sl), 2).map(logRecord),
        })),
      };
    }),
  };
}
