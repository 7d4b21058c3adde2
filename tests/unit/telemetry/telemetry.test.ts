/**
 * Telemetry units: settings from `[telemetry]` and the OTEL_* environment, the span/log
 * record of an Outcome (attributes, reply text), the sink's one function for every exported
 * string, and the `[telemetry]` schema.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfigText } from "../../../lib/config/config.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { redact } from "../../../lib/text/redact.ts";
import {
  attemptRecord,
  swallowed,
  type TurnContext,
  turnRecord,
  UNKNOWN_PROVIDER,
} from "../../../lib/telemetry/record.ts";
import { EXPORTED_TEXT_BYTES, exportedText, exportedValue } from "../../../lib/telemetry/sink.ts";
import {
  DEFAULT_FLUSH_MS,
  resolveTelemetry,
  type TelemetryTable,
} from "../../../lib/telemetry/settings.ts";
import { homeEnv, turnguard } from "../../helpers/cli.ts";
import { testOutcome } from "../../helpers/outcome.ts";

const resolve = (table: TelemetryTable | null, env: Record<string, string> = {}) =>
  resolveTelemetry(table, env, "9.9.9");

describe("telemetry settings", () => {
  test("off unless configured", () => {
    expect(resolve(null)).toEqual({ settings: null, warnings: [] });
    expect(resolve({ include_reply: true, headers: { a: "b" } }).settings).toBeNull();
  });

  test("OTEL_EXPORTER_OTLP_ENDPOINT: both signals under it, defaults for the rest", () => {
    const { settings, warnings } = resolve(null, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
    });
    expect(warnings).toEqual([]);
    expect(settings).toEqual({
      traces: { url: "http://collector:4318/v1/traces", headers: {}, protocol: "http/protobuf" },
      logs: { url: "http://collector:4318/v1/logs", headers: {}, protocol: "http/protobuf" },
      resource: { "service.name": "turnguard", "service.version": "9.9.9" },
      includeReply: false,
      providers: { claude: "anthropic", codex: "openai", gemini: "gcp.gemini", agy: "gcp.gen_ai" },
      flushMs: DEFAULT_FLUSH_MS,
      queueSize: 2048,
    });
    // A trailing slash gives no double slash.
    expect(
      resolve(null, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/base/" }).settings?.logs?.url,
    ).toBe("http://c:4318/base/v1/logs");
  });

  test("OTEL_SDK_DISABLED=true and enabled = false turn export off whatever else is set", () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    expect(resolve(null, { ...env, OTEL_SDK_DISABLED: "TRUE" }).settings).toBeNull();
    expect(resolve({ enabled: false }, env).settings).toBeNull();
    expect(resolve(null, { ...env, OTEL_SDK_DISABLED: "false" }).settings).not.toBeNull();
  });

  test("enabled = true with no endpoint: the specification's default endpoint", () => {
    expect(resolve({ enabled: true }).settings?.traces?.url).toBe(
      "http://localhost:4318/v1/traces",
    );
  });

  test("signal endpoints are used as they are; the environment wins over the table", () => {
    const { settings } = resolve(
      { endpoint: "http://table:1", logs_endpoint: "http://table-logs:2/in" },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://env-traces:3/t" },
    );
    expect(settings?.traces?.url).toBe("http://env-traces:3/t");
    expect(settings?.logs?.url).toBe("http://table-logs:2/in");
    const only = resolve(null, { OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: "http://l:1/x" }).settings;
    expect([only?.traces, only?.logs?.url]).toEqual([null, "http://l:1/x"]);
  });

  test("one signal only: OTEL_TRACES_EXPORTER=none, or signals = [...]", () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    const a = resolve(null, { ...env, OTEL_TRACES_EXPORTER: "none" }).settings;
    expect([a?.traces, a?.logs?.url]).toEqual([null, "http://c:4318/v1/logs"]);
    const b = resolve({ signals: ["traces"] }, env).settings;
    expect([b?.traces?.url, b?.logs]).toEqual(["http://c:4318/v1/traces", null]);
    expect(resolve({ signals: [] }, env).settings).toBeNull();
  });

  test("headers: table, then OTEL_EXPORTER_OTLP_HEADERS, then the signal's own", () => {
    const { settings } = resolve({ endpoint: "http://c:1", headers: { a: "table", b: "table" } }, {
      OTEL_EXPORTER_OTLP_HEADERS: "b=env,api-key=s%20ecret",
      OTEL_EXPORTER_OTLP_LOGS_HEADERS: "a=logs",
    });
    expect(settings?.traces?.headers).toEqual({ a: "table", b: "env", "api-key": "s ecret" });
    expect(settings?.logs?.headers).toEqual({ a: "logs", b: "env", "api-key": "s ecret" });
  });

  test("resource: OTEL_SERVICE_NAME over OTEL_RESOURCE_ATTRIBUTES over the table", () => {
    const table = { endpoint: "http://c:1", service_name: "t", resource_attributes: { x: "1" } };
    expect(resolve(table).settings?.resource).toEqual({
      "service.name": "t",
      "service.version": "9.9.9",
      x: "1",
    });
    const env = { OTEL_RESOURCE_ATTRIBUTES: "service.name=r,x=2,host.name=h%2C1" };
    expect(resolve(table, env).settings?.resource).toEqual({
      "service.name": "r",
      "service.version": "9.9.9",
      x: "2",
      "host.name": "h,1",
    });
    expect(resolve(table, { ...env, OTEL_SERVICE_NAME: "s" }).settings?.resource["service.name"])
      .toBe("s");
  });

  test("protocol: http/protobuf unless asked; a signal's own variable wins; grpc is one line", () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    const protocols = (table: TelemetryTable | null, extra: Record<string, string>) => {
      const { settings, warnings } = resolve(table, { ...env, ...extra });
      return [settings?.traces?.protocol ?? null, settings?.logs?.protocol ?? null, warnings];
    };
    expect(protocols(null, {})).toEqual(["http/protobuf", "http/protobuf", []]);
    expect(protocols({ protocol: "http/json" }, {})).toEqual(["http/json", "http/json", []]);
    expect(protocols({ protocol: "http/json" }, { OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" }))
      .toEqual(["http/protobuf", "http/protobuf", []]);
    expect(protocols(null, { OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: "HTTP/JSON" }))
      .toEqual(["http/protobuf", "http/json", []]);
    // Both signals read the same bad value: one line, and nothing is sent over it.
    expect(protocols(null, { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toEqual([null, null, [
      'telemetry: OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported (only http/protobuf and http/json); nothing is exported over it',
    ]]);
    expect(
      protocols(null, { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" }),
    ).toEqual([null, "http/protobuf", [
      'telemetry: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="grpc" is not supported (only http/protobuf and http/json); nothing is exported over it',
    ]]);
    // Export off: the protocol is not looked at.
    expect(resolve(null, { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toEqual({
      settings: null,
      warnings: [],
    });
  });

  test("bad environment values are said once and ignored", () => {
    const r = resolve({ endpoint: "http://table:1" }, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318",
      OTEL_RESOURCE_ATTRIBUTES: "novalue,k=%zz",
    });
    expect(r.settings?.traces?.url).toBe("http://table:1/v1/traces");
    expect(r.warnings).toEqual([
      'telemetry: OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL ("collector:4318"); it is ignored',
      'telemetry: OTEL_RESOURCE_ATTRIBUTES: "novalue" is not key=value; it is ignored',
      'telemetry: OTEL_RESOURCE_ATTRIBUTES: the value of "k" is not percent-encoded; ignored',
    ]);
    // What is said of a bad value never shows a secret in it.
    const secret = resolve(null, {
      OTEL_EXPORTER_OTLP_ENDPOINT: "https://bob:hunter22@collector:4318 ",
      OTEL_EXPORTER_OTLP_HEADERS:
        "Authorization Bearer abcdefghijklmnop,x-api-key:sk-abcdefghijklmnopqrstuvwx",
    });
    expect(secret.warnings).toHaveLength(2);
    expect(secret.warnings.join("\n")).not.toMatch(/abcdefghijklmnop|hunter22/);
    const bad = resolve(null, { OTEL_EXPORTER_OTLP_ENDPOINT: "collector://bob:hunter22@x" });
    expect(bad.warnings).toEqual([
      'telemetry: OTEL_EXPORTER_OTLP_ENDPOINT is not an http(s) URL ("collector://bob:[REDACTED:url]@x"); it is ignored',
    ]);
    // Only a bad URL and nothing else: off, and said.
    const off = resolve(null, { OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://x" });
    expect(off.settings).toBeNull();
    expect(off.warnings).toHaveLength(1);
  });

  test("include_reply, flush_timeout_ms, queue_size and providers come from the table", () => {
    const s = resolve({
      endpoint: "http://c:1",
      include_reply: true,
      flush_timeout_ms: 250,
      queue_size: 7,
      providers: { agy: "gcp.gemini", claude: "aws.bedrock" },
    }).settings!;
    expect([s.includeReply, s.flushMs, s.queueSize]).toEqual([true, 250, 7]);
    expect(s.providers).toEqual({
      agy: "gcp.gemini",
      claude: "aws.bedrock",
      codex: "openai",
      gemini: "gcp.gemini",
    });
  });
});

describe("[telemetry] in a config file", () => {
  test("a valid table parses", () => {
    const parsed = parseConfigText(
      "a.toml",
      '[telemetry]\nendpoint = "http://c:4318"\ninclude_reply = true\nflush_timeout_ms = 500\n',
    );
    expect(parsed.data.telemetry).toEqual({
      endpoint: "http://c:4318",
      include_reply: true,
      flush_timeout_ms: 500,
    });
  });

  const error = (text: string) => {
    try {
      parseConfigText("a.toml", text);
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    throw new Error("expected a ConfigError");
  };

  test("bad keys and values name file, line and key", () => {
    expect(error('[agent.x]\nmatch = ["x"]\n\n[telemetry]\nendpiont = "http://c"\n'))
      .toBe("a.toml:5: telemetry.endpiont: unknown key `endpiont`");
    expect(error('[telemetry]\nendpoint = "collector:4318"\n'))
      .toBe("a.toml:2: telemetry.endpoint: expected an http(s) URL");
    expect(error("[telemetry]\nflush_timeout_ms = -1\n")).toMatch(
      /^a\.toml:2: telemetry\.flush_timeout_ms: /,
    );
    expect(error('[telemetry]\nsignals = ["metrics"]\n')).toMatch(
      /^a\.toml:2: telemetry\.signals\[0\]: /,
    );
  });

  test("turnguard check reports a bad [telemetry] with file:line:key, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tg-telemetry-check-"));
    const config = join(dir, "anchors.toml");
    writeFileSync(config, '# telemetry\n[telemetry]\ninclude_reply = "yes"\n');
    const r = await turnguard(["check", "--config", config], { env: homeEnv(dir) });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(`^turnguard: ${config}:3: telemetry\\.include_reply: .*\\n$`),
    );
  });
});

const ctx = (over: Partial<TurnContext> = {}): TurnContext => ({
  conversationId: "run-1-abc",
  attempt: 0,
  name: "w1",
  provider: UNKNOWN_PROVIDER,
  includeReply: false,
  ...over,
});

/** A cause with a Google API key in it. */
const QUOTA_WITH_KEY =
  "RESOURCE_EXHAUSTED: quota reached (key=AIzaSyA1234567890abcdefghijklmnopqrstu)";

/** The turn of a single attempt. */
const single = (outcome: Parameters<typeof turnRecord>[0], c: TurnContext) =>
  turnRecord(outcome, c, { startMs: Date.parse(outcome.startedAt), attempts: c.attempt + 1 });

describe("turnRecord", () => {
  test("a swallowed quota failure in run mode: every documented attribute", () => {
    const outcome = testOutcome("failed", "", {
      agent: "agy",
      exit: { code: 0, signal: null },
      startedAt: "2026-01-01T00:00:00.000Z",
      endedAt: "2026-01-01T00:00:01.500Z",
      durationMs: 1500,
      error: {
        code: 429,
        message: QUOTA_WITH_KEY,
        category: "quota",
        anchor: "agy.executor",
        source: { path: "/home/u/.gemini/log/cli.log", offset: 10 },
      },
      retry: { retryable: true, reason: "quota: retry in 1h", afterMs: 3_600_000, at: null },
    });
    const rec = single(outcome, ctx({ provider: "gcp.gemini", attempt: 1 }));
    expect(rec.spanName).toBe("invoke_agent agy");
    expect([rec.startMs, rec.endMs]).toEqual([
      Date.parse("2026-01-01T00:00:00.000Z"),
      Date.parse("2026-01-01T00:00:01.500Z"),
    ]);
    // Texts are as they are: the sink redacts them on their way out.
    expect(rec.error).toBe(`quota: ${QUOTA_WITH_KEY}`);
    expect(rec.severity).toBe("ERROR");
    expect(rec.attributes).toEqual({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "agy",
      "gen_ai.provider.name": "gcp.gemini",
      "gen_ai.system": "gcp.gemini",
      "gen_ai.conversation.id": "run-1-abc",
      "error.type": "quota",
      "turnguard.mode": "run",
      "turnguard.agent": "agy",
      "turnguard.name": "w1",
      "turnguard.turn": 1,
      "turnguard.attempt": 1,
      "turnguard.status": "failed",
      "turnguard.swallowed": true,
      "turnguard.duration_ms": 1500,
      "turnguard.reply.chars": 0,
      "turnguard.exit.code": 0,
      "turnguard.category": "quota",
      "turnguard.error.message": QUOTA_WITH_KEY,
      "turnguard.error.code": "429",
      "turnguard.anchor": "agy.executor",
      "turnguard.retryable": true,
      "turnguard.retry.after_ms": 3_600_000,
      "turnguard.attempts": 2,
    });
    expect(rec.body).toEqual({ ...outcome, reply: { chars: 0 } });
    // The attempt's own span: the same attributes but the operation and the count.
    const { "gen_ai.operation.name": _op, "turnguard.attempts": _n, ...rest } = rec.attributes;
    const one = attemptRecord(outcome, ctx({ provider: "gcp.gemini", attempt: 1 }));
    expect([one.spanName, one.error, one.attributes]).toEqual(["attempt agy", rec.error, rest]);
  });

  test("a turn of several attempts: from the first start, the last attempt's status", () => {
    const last = testOutcome("ok", "fine", {
      startedAt: "2026-01-01T00:00:10.000Z",
      endedAt: "2026-01-01T00:00:11.000Z",
    });
    const rec = turnRecord(last, ctx({ attempt: 2 }), {
      startMs: Date.parse("2026-01-01T00:00:00.000Z"),
      attempts: 3,
    });
    expect([rec.startMs, rec.endMs, rec.error, rec.severity]).toEqual([
      Date.parse("2026-01-01T00:00:00.000Z"),
      Date.parse("2026-01-01T00:00:11.000Z"),
      null,
      "INFO",
    ]);
    expect(rec.attributes).toMatchObject({
      "turnguard.status": "ok",
      "turnguard.attempt": 2,
      "turnguard.attempts": 3,
      "gen_ai.provider.name": "_OTHER",
    });
    expect(rec.attributes["gen_ai.system"]).toBeUndefined();
  });

  test("a proxy turn: the session is the conversation, stop reason and publish result", () => {
    const outcome = testOutcome("ok", "the answer", {
      mode: "proxy",
      agent: "claude",
      session: "sess-1",
      turn: 3,
      stopReason: "end_turn",
      exit: null,
      publish: {
        armed: true,
        detected: false,
        detector: null,
        fallback: { sent: true, exitCode: 0 },
      },
    });
    const rec = single(outcome, ctx({ conversationId: null, provider: "anthropic" }));
    expect(rec.severity).toBe("INFO");
    expect(rec.error).toBeNull();
    expect(rec.attributes).toMatchObject({
      "gen_ai.conversation.id": "sess-1",
      "gen_ai.response.finish_reasons": ["end_turn"],
      "turnguard.stop_reason": "end_turn",
      "turnguard.status": "ok",
      "turnguard.swallowed": false,
      "turnguard.turn": 3,
      "turnguard.publish.armed": true,
      "turnguard.publish.detected": false,
      "turnguard.publish.fallback.sent": true,
      "turnguard.publish.fallback.exit_code": 0,
    });
    expect(Object.keys(rec.attributes).filter((k) => k.startsWith("turnguard.exit"))).toEqual([]);
    expect(rec.attributes["error.type"]).toBeUndefined();
  });

  test("reply text: never by default; with include_reply", () => {
    const outcome = testOutcome("ok", "here is the answer");
    const off = single(outcome, ctx());
    expect(off.attributes["turnguard.reply.text"]).toBeUndefined();
    expect(JSON.stringify(off)).not.toContain("here is the answer");
    expect((off.body as { reply: unknown }).reply).toEqual({ chars: outcome.reply.chars });
    const on = single(outcome, ctx({ includeReply: true }));
    expect(on.attributes["turnguard.reply.text"]).toBe("here is the answer");
    expect((on.body as { reply: unknown }).reply).toEqual(outcome.reply);
  });

  test("swallowed: the agent said end_turn or exit 0, turnguard said failed", () => {
    expect(swallowed(testOutcome("failed", "", { exit: { code: 0, signal: null } }))).toBe(true);
    expect(swallowed(testOutcome("failed", "", { exit: { code: 1, signal: null } }))).toBe(false);
    expect(swallowed(testOutcome("failed", "", { stopReason: "end_turn", exit: null }))).toBe(true);
    expect(swallowed(testOutcome("failed", "", { stopReason: null, exit: null }))).toBe(false);
    expect(swallowed(testOutcome("empty", "", { exit: { code: 0, signal: null } }))).toBe(false);
  });

  test("empty and truncated turns are warnings, cancelled ones information", () => {
    expect(single(testOutcome("empty"), ctx()).severity).toBe("WARN");
    expect(single(testOutcome("truncated"), ctx()).severity).toBe("WARN");
    expect(single(testOutcome("cancelled"), ctx()).severity).toBe("INFO");
  });
});

describe("the sink's one function for every exported string", () => {
  test("redacted as the journal redacts, controls made visible, lone surrogates replaced", () => {
    expect(exportedText(QUOTA_WITH_KEY)).toBe(redact(QUOTA_WITH_KEY));
    expect(exportedText(QUOTA_WITH_KEY)).not.toContain("AIzaSy");
    expect(exportedText("a\x1b]0;title\x07b\r\n\tc\u2067d")).toBe(
      "a\\x1b]0;title\\x07b\r\n\tc\\u2067d",
    );
    expect(exportedText("x\uDC00y\uD83D\uDE00")).toBe("x\uFFFDy\uD83D\uDE00");
    expect(exportedText("plain")).toBe("plain");
  });

  test("a long text is cut, and a key cut short at the end still goes whole", () => {
    const long = "a".repeat(EXPORTED_TEXT_BYTES - 10) + " sk-ant-api03-abcdefghijklmnop";
    const out = exportedText(long);
    expect(out.endsWith("[REDACTED:cut]…")).toBe(true);
    expect(out).not.toContain("sk-ant");
    expect(new TextEncoder().encode(out).length).toBeLessThan(EXPORTED_TEXT_BYTES + 64);
  });

  test("every string of a nested value, keys too; other values kept", () => {
    const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz";
    const value: Record<string, unknown> = { [key]: [key, 1, true, null, { deep: `x ${key}` }] };
    expect(exportedValue(value)).toEqual({
      "[REDACTED:anthropic]": ["[REDACTED:anthropic]", 1, true, null, {
        deep: "x [REDACTED:anthropic]",
      }],
    });
  });
});
