/**
 * Telemetry settings: the `[telemetry]` config table and the standard `OTEL_*` environment
 * variables resolved into what the OTLP exporter needs, or null when export is off. Pure:
 * nothing here loads the OpenTelemetry packages (lib/telemetry/otel.ts does, on demand).
 */
import * as v from "valibot";
import { once } from "../once.ts";
import { redact } from "../text/redact.ts";

/** Milliseconds the process may wait at exit for the last records to reach the collector. */
export const DEFAULT_FLUSH_MS = 1000;
/** Records waiting for export, per signal; more are dropped (and counted). */
export const DEFAULT_QUEUE_SIZE = 2048;
/** The OTLP/HTTP endpoint the specification names when none is configured. */
export const DEFAULT_ENDPOINT = "http://localhost:4318";

/**
 * The providers of the built-in agent profiles, as the GenAI conventions' well-known
 * `gen_ai.provider.name` values name them (semantic-conventions-genai,
 * docs/gen-ai/gen-ai-agent-spans.md): claude-agent-acp calls Anthropic, codex-acp OpenAI,
 * gemini-cli the Gemini API (`gcp.gemini`: generativelanguage.googleapis.com); agy is
 * Google's, its backend not stated (`gcp.gen_ai`: "any Google generative AI endpoint").
 */
export const BUILTIN_PROVIDERS: Readonly<Record<string, string>> = {
  claude: "anthropic",
  codex: "openai",
  gemini: "gcp.gemini",
  agy: "gcp.gen_ai",
};

/**
 * The OTLP/HTTP encodings turnguard sends. `http/protobuf` is the default, as the OTLP
 * exporter specification asks of SDKs ("Protocol", "Default: http/protobuf",
 * https://opentelemetry.io/docs/specs/otel/protocol/exporter/); `grpc` is not supported.
 */
export const PROTOCOLS = ["http/protobuf", "http/json"] as const;
/** One of PROTOCOLS. */
export type Protocol = typeof PROTOCOLS[number];
/** The protocol when none is configured. */
export const DEFAULT_PROTOCOL: Protocol = "http/protobuf";

const Url = once(() =>
  v.pipe(
    v.string(),
    v.url("expected an http(s) URL"),
    v.regex(/^https?:/i, "expected an http(s) URL"),
  )
);

/** `[telemetry]` as written in a config file (docs/TELEMETRY.md). */
export const TelemetryTableSchema = once(() =>
  v.strictObject({
    /** false: never export, whatever the environment says; true: export (default endpoint). */
    enabled: v.optional(v.boolean()),
    /** Base OTLP/HTTP URL; `/v1/traces` and `/v1/logs` are appended. */
    endpoint: v.optional(Url()),
    /** Full URL for spans (used as is). */
    traces_endpoint: v.optional(Url()),
    /** Full URL for log records (used as is). */
    logs_endpoint: v.optional(Url()),
    /** Extra HTTP headers sent with every export (e.g. an API key). */
    headers: v.optional(v.record(v.string(), v.string())),
    /** `service.name` of the resource (default `turnguard`). */
    service_name: v.optional(v.pipe(v.string(), v.minLength(1))),
    /** More resource attributes (`deployment.environment.name = "ci"`). */
    resource_attributes: v.optional(v.record(v.string(), v.string())),
    /** `http/protobuf` (default) or `http/json`; OTEL_EXPORTER_OTLP_PROTOCOL wins. */
    protocol: v.optional(v.picklist(PROTOCOLS)),
    /** Which signals to send (default both). */
    signals: v.optional(v.array(v.picklist(["traces", "logs"]))),
    /** `gen_ai.provider.name` per agent profile, over the built-in ones (`agy = "gcp.gemini"`). */
    providers: v.optional(v.record(v.string(), v.pipe(v.string(), v.minLength(1)))),
    /** Export the reply text (redacted) too; off by default. */
    include_reply: v.optional(v.boolean()),
    /** How long exit may wait for the last records, in milliseconds (default 1000). */
    flush_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60000))),
    /** Records queued per signal before new ones are dropped (default 2048). */
    queue_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000))),
  })
);
/** The `[telemetry]` table of a config file. */
export type TelemetryTable = v.InferOutput<ReturnType<typeof TelemetryTableSchema>>;

/** Where one signal goes, and how it is encoded. */
export interface SignalTarget {
  url: string;
  headers: Record<string, string>;
  protocol: Protocol;
}

/** Everything the exporter needs; null settings mean export is off. */
export interface TelemetrySettings {
  traces: SignalTarget | null;
  logs: SignalTarget | null;
  /** Resource attributes, `service.name` included. */
  resource: Record<string, string>;
  includeReply: boolean;
  /** `gen_ai.provider.name` per agent profile. */
  providers: Record<string, string>;
  flushMs: number;
  queueSize: number;
}

/** The resolved settings and the one-line warnings about ignored environment values. */
export interface ResolvedTelemetry {
  settings: TelemetrySettings | null;
  warnings: string[];
}

type Env = Record<string, string | undefined>;

/**
 * Resolves `[telemetry]` (merged over the config files) and the environment. Export is on
 * when an OTLP endpoint is configured (environment or table) or `enabled = true`, and off
 * with `OTEL_SDK_DISABLED=true` or `enabled = false`. The environment wins over the table.
 */
export function resolveTelemetry(
  table: TelemetryTable | null,
  env: Env,
  version: string,
): ResolvedTelemetry {
  const warnings: string[] = [];
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true" || table?.enabled === false) {
    return { settings: null, warnings };
  }
  /**
   * The signal's protocol: its own variable, else the common one, else the table. An
   * unsupported one turns the signal off (sending JSON or protobuf to a gRPC port only
   * loses every record): one line, the same for both signals, so said once.
   */
  const protocolOf = (signal: "traces" | "logs"): Protocol | null => {
    const own = `OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_PROTOCOL`;
    const name = env[own]?.trim() ? own : "OTEL_EXPORTER_OTLP_PROTOCOL";
    const value = env[name]?.trim();
    if (!value) return table?.protocol ?? DEFAULT_PROTOCOL;
    const known = PROTOCOLS.find((p) => p === value.toLowerCase());
    if (known) return known;
    warnings.push(
      `telemetry: ${name}="${redact(value)}" is not supported (only ${
        PROTOCOLS.join(" and ")
      }); nothing is exported over it`,
    );
    return null;
  };
  const urlFrom = (name: string): string | undefined => {
    const value = env[name]?.trim();
    if (!value) return undefined;
    if (isHttpUrl(value)) return value;
    warnings.push(
      `telemetry: ${name} is not an http(s) URL ("${redact(value)}"); it is ignored`,
    );
    return undefined;
  };
  // `enabled = true` with no endpoint anywhere: the specification's default endpoint.
  const base = urlFrom("OTEL_EXPORTER_OTLP_ENDPOINT") ?? table?.endpoint ??
    (table?.enabled === true ? DEFAULT_ENDPOINT : undefined);
  const target = (signal: "traces" | "logs"): SignalTarget | null => {
    const upper = signal.toUpperCase();
    if (env[`OTEL_${upper}_EXPORTER`]?.trim().toLowerCase() === "none") return null;
    if (table?.signals && !table.signals.includes(signal)) return null;
    const url = urlFrom(`OTEL_EXPORTER_OTLP_${upper}_ENDPOINT`) ??
      table?.[`${signal}_endpoint`] ??
      (base !== undefined ? appendPath(base, `v1/${signal}`) : undefined);
    if (url === undefined) return null;
    const protocol = protocolOf(signal);
    if (protocol === null) return null;
    const headers = {
      ...table?.headers,
      ...parseKeyValues(env.OTEL_EXPORTER_OTLP_HEADERS, "OTEL_EXPORTER_OTLP_HEADERS", warnings),
      ...parseKeyValues(
        env[`OTEL_EXPORTER_OTLP_${upper}_HEADERS`],
        `OTEL_EXPORTER_OTLP_${upper}_HEADERS`,
        warnings,
      ),
    };
    return { url, headers, protocol };
  };
  const traces = target("traces");
  const logs = target("logs");
  const resource: Record<string, string> = {
    "service.name": "turnguard",
    "service.version": version,
    ...table?.resource_attributes,
    ...(table?.service_name ? { "service.name": table.service_name } : {}),
    ...parseKeyValues(env.OTEL_RESOURCE_ATTRIBUTES, "OTEL_RESOURCE_ATTRIBUTES", warnings),
    ...(env.OTEL_SERVICE_NAME?.trim() ? { "service.name": env.OTEL_SERVICE_NAME.trim() } : {}),
  };
  // The same variable may be read for both signals: each warning is said once.
  const unique = [...new Set(warnings)];
  if (traces === null && logs === null) return { settings: null, warnings: unique };
  return {
    settings: {
      traces,
      logs,
      resource,
      includeReply: table?.include_reply === true,
      providers: { ...BUILTIN_PROVIDERS, ...table?.providers },
      flushMs: table?.flush_timeout_ms ?? DEFAULT_FLUSH_MS,
      queueSize: table?.queue_size ?? DEFAULT_QUEUE_SIZE,
    },
    warnings: unique,
  };
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** `http://host:4318` + `v1/traces`, with exactly one slash between them. */
export function appendPath(base: string, path: string): string {
  return base.endsWith("/") ? base + path : `${base}/${path}`;
}

/**
 * Parses the W3C-baggage-like lists the OTel environment uses (`k1=v1,k2=v2`, values
 * percent-encoded); a malformed entry is skipped with a warning naming the variable. The
 * warning shows a malformed entry redacted, and never an entry of a `…HEADERS` variable
 * (their values are credentials in any shape): it names it by its place.
 */
export function parseKeyValues(
  raw: string | undefined,
  name: string,
  warnings: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw?.trim()) return out;
  const secret = name.endsWith("HEADERS");
  for (const [i, entry] of raw.split(",").entries()) {
    if (!entry.trim()) continue;
    const eq = entry.indexOf("=");
    const key = eq > 0 ? entry.slice(0, eq).trim() : "";
    if (!key) {
      const what = secret ? `entry ${i + 1}` : `"${redact(entry.trim())}"`;
      warnings.push(`telemetry: ${name}: ${what} is not key=value; it is ignored`);
      continue;
    }
    try {
      out[key] = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      warnings.push(`telemetry: ${name}: the value of "${key}" is not percent-encoded; ignored`);
    }
  }
  return out;
}
