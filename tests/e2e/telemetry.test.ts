/**
 * OTLP export end to end: the compiled binary (`run` and `proxy`) sends each turn to a local
 * OTLP/HTTP receiver; a collector that is down or never answers costs at most the flush
 * bound; with export off the OpenTelemetry modules are never loaded; Deno from source
 * exports too.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { BUN, FAKE_AGY, homeEnv, MAIN, ROOT, runProcess, turnguard } from "../helpers/cli.ts";
import { type ReceivedSpan, type Receiver, startReceiver } from "../helpers/otlp_receiver.ts";
import {
  AGENT,
  fakeArgs,
  killedAfterEach,
  openSession,
  prompt,
  type ProxyProcess,
  rejection,
  type Scratch,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";

const FLAKY = join(ROOT, "tests", "fixtures", "retry", "flaky-agent");
let binary: string;
beforeAll(() => {
  binary = ensureBinary();
});

let home: string;
const receivers: Receiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
  if (home) rmSync(home, { recursive: true, force: true });
});
async function receiver(mode: "ok" | "silent" = "ok"): Promise<Receiver> {
  const r = await startReceiver(mode);
  receivers.push(r);
  return r;
}
const freshHome = () => (home = mkdtempSync(join(tmpdir(), "tg-otel-")));

/** Runs the compiled binary's `run` with an isolated home and `extra` environment. */
function run(args: string[], extra: Record<string, string | undefined>) {
  return runProcess([binary, "run", ...args], { env: homeEnv(freshHome(), extra) });
}

/** No OTEL_* setting of the machine running the tests leaks in. */
const NO_OTEL: Record<string, undefined> = Object.fromEntries(
  Object.keys(process.env).filter((k) => k.startsWith("OTEL_")).map((k) => [k, undefined]),
);

describe("turnguard run exports each turn", () => {
  test(
    "a swallowed quota failure: one span, one log record, the documented attributes",
    async () => {
      const r = await receiver();
      const res = await run(["--name", "w1", "--", FAKE_AGY], {
        ...NO_OTEL,
        FAKE_AGY: "quota",
        OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
        OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=abc%20123",
        OTEL_SERVICE_NAME: "ci-agents",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
      });
      expect(res.code).toBe(1);
      expect(res.stderr).not.toContain("telemetry");
      expect(r.spans).toHaveLength(1);
      expect(r.logs).toHaveLength(1);
      const [span] = r.spans;
      const [log] = r.logs;
      expect(span.name).toBe("invoke_agent agy");
      expect(span.status).toMatchObject({ code: 2 }); // ERROR
      expect(span.status.message).toMatch(/^quota: .*RESOURCE_EXHAUSTED/);
      expect(span.endMs).toBeGreaterThanOrEqual(span.startMs);
      expect(span.parentSpanId).toBe("");
      expect(span.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "agy",
        "error.type": "quota",
        "turnguard.mode": "run",
        "turnguard.agent": "agy",
        "turnguard.name": "w1",
        "turnguard.status": "failed",
        "turnguard.category": "quota",
        "turnguard.retryable": true,
        "turnguard.anchor": "agy.executor",
        "turnguard.exit.code": 0,
        "turnguard.swallowed": true,
        "turnguard.turn": 1,
        "turnguard.attempt": 0,
      });
      expect(span.attributes["gen_ai.conversation.id"]).toMatch(/^run-\d+-/);
      expect(span.attributes["turnguard.retry.after_ms"]).toBeGreaterThan(0);
      expect(span.resource).toMatchObject({
        "service.name": "ci-agents",
        "service.version": "0.1.0",
        "deployment.environment.name": "test",
      });
      // The log record is the Outcome, in the span's context.
      expect([log.traceId, log.spanId]).toEqual([span.traceId, span.spanId]);
      expect([log.eventName, log.severityText]).toEqual(["turnguard.turn", "ERROR"]);
      expect(log.attributes).toEqual(span.attributes);
      expect(log.body).toMatchObject({
        v: 1,
        mode: "run",
        agent: "agy",
        status: "failed",
        error: { category: "quota", anchor: "agy.executor" },
        reply: { chars: 0 },
      });
      expect(r.requests.map((q) => q.headers["x-api-key"])).toEqual(["abc 123", "abc 123"]);
    },
    60_000,
  );

  test("a retry's span links to the attempt it retries", async () => {
    const r = await receiver();
    const res = await run(["--retries", "1", "--", FLAKY], {
      ...NO_OTEL,
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      FLAKY_COUNTER: join(tmpdir(), `tg-otel-flaky-${process.pid}-${Date.now()}`),
      FLAKY_PLAN: "hint,ok",
    });
    expect([res.code, res.stdout]).toEqual([0, "the answer\n"]);
    const spans = r.spans.sort((a, b) => a.startMs - b.startMs);
    expect(spans.map((s) => [s.attributes["turnguard.attempt"], s.attributes["turnguard.status"]]))
      .toEqual([[0, "failed"], [1, "ok"]]);
    expect(spans[0].attributes["gen_ai.conversation.id"])
      .toBe(spans[1].attributes["gen_ai.conversation.id"]);
    expect(spans[0].links).toEqual([]);
    expect(spans[1].links).toEqual([{
      traceId: spans[0].traceId,
      spanId: spans[0].spanId,
      attributes: { "turnguard.retry_of.attempt": 0 },
    }]);
    expect(spans[1].status.code ?? 0).toBe(0);
    expect(r.logs.map((l) => l.severityText).sort()).toEqual(["ERROR", "INFO"]);
  }, 60_000);

  test("reply text: absent by default, redacted with include_reply", async () => {
    const secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz";
    const agent = join(mkdtempSync(join(tmpdir(), "tg-otel-agent-")), "talker");
    writeFileSync(agent, `#!/bin/sh\necho "the key is ${secret}, enjoy"\n`, { mode: 0o755 });
    const off = await receiver();
    await run(["--", agent], { ...NO_OTEL, OTEL_EXPORTER_OTLP_ENDPOINT: off.url });
    expect(off.spans).toHaveLength(1);
    expect(off.raw.join("\n")).not.toContain("the key is");

    const on = await receiver();
    const dir = freshHome();
    const config = join(dir, "anchors.toml");
    writeFileSync(config, `[telemetry]\nendpoint = "${on.url}"\ninclude_reply = true\n`);
    const res = await runProcess([binary, "run", "--config", config, "--", agent], {
      env: homeEnv(dir, NO_OTEL),
    });
    expect(res.stdout).toContain(secret); // the pass-through is untouched
    const redacted = /^the key is \[REDACTED[^\]]*\], enjoy\n$/;
    expect(on.spans[0].attributes["turnguard.reply.text"]).toMatch(redacted);
    expect((on.logs[0].body as { reply: { text: string } }).reply.text).toMatch(redacted);
    expect(on.raw.join("\n")).not.toContain(secret);
    rmSync(join(agent, ".."), { recursive: true, force: true });
  }, 60_000);

  test("[telemetry] enabled = false wins over the environment", async () => {
    const r = await receiver();
    const dir = freshHome();
    const config = join(dir, "anchors.toml");
    writeFileSync(config, "[telemetry]\nenabled = false\n");
    const res = await runProcess([binary, "run", "--config", config, "--", "true"], {
      env: homeEnv(dir, { ...NO_OTEL, OTEL_EXPORTER_OTLP_ENDPOINT: r.url }),
    });
    expect([res.code, res.stderr]).toEqual([0, ""]);
    expect(r.requests).toEqual([]);
  }, 60_000);
});

/** A port on 127.0.0.1 with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

describe("a collector that is down or never answers costs no turn", () => {
  // Without the flush bound, the exporter would wait its 10 s export timeout (and retry).
  const BOUND_SMOKE_MS = 8000;

  test(
    "nothing listening: same exit code and output, one stderr line, exit within the bound",
    async () => {
      const port = await closedPort();
      const started = Date.now();
      const res = await run(["--", FAKE_AGY], {
        ...NO_OTEL,
        FAKE_AGY: "ok",
        // A password in the endpoint is never said on stderr.
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://bob:hunter22@127.0.0.1:${port}`,
      });
      const took = Date.now() - started;
      expect([res.code, res.stdout]).toEqual([0, "hi there\n"]);
      const lines = res.stderr.split("\n").filter(Boolean);
      expect(lines).toEqual([
        expect.stringMatching(
          new RegExp(
            `^turnguard: telemetry: 2 of 2 records were not exported to http://bob:\\[REDACTED:url\\]@127\\.0\\.0\\.1:${port}/v1/traces, .*\\(.+\\)$`,
          ),
        ),
      ]);
      expect(took).toBeLessThan(BOUND_SMOKE_MS);
    },
    60_000,
  );

  test("a collector that never answers: exit within the configured flush bound", async () => {
    const r = await receiver("silent");
    const dir = freshHome();
    const config = join(dir, "anchors.toml");
    writeFileSync(config, `[telemetry]\nendpoint = "${r.url}"\nflush_timeout_ms = 200\n`);
    const started = Date.now();
    const res = await runProcess([binary, "run", "--config", config, "--", FAKE_AGY], {
      env: homeEnv(dir, { ...NO_OTEL, FAKE_AGY: "quota" }),
    });
    const took = Date.now() - started;
    expect(res.code).toBe(1);
    expect(r.requests.length).toBeGreaterThan(0); // the records were on their way
    expect(res.stderr).toContain(
      "records were not exported to " + `${r.url}/v1/traces, ${r.url}/v1/logs ` +
        "(no answer from the collector within the 200 ms flush bound)",
    );
    expect(took).toBeLessThan(BOUND_SMOKE_MS);
  }, 60_000);
});

/** Starts the compiled binary as a proxy in front of the fake ACP agent. */
function binaryProxy(s: Scratch, args: string[], env: Record<string, string>): ProxyProcess {
  return startProxy(s, fakeArgs(s, args), [BUN, AGENT], env, [binary]);
}

const track = killedAfterEach();

describe("turnguard proxy exports each turn, one trace per ACP session", () => {
  test("turns are children of their session's span; failures carry error.type", async () => {
    const r = await receiver();
    const s = scratch();
    const p = track(binaryProxy(s, [], { OTEL_EXPORTER_OTLP_ENDPOINT: r.url }));
    const sessions = await withClient(p, async (ctx) => {
      const a = await openSession(ctx);
      expect((await prompt(ctx, a, "echo hello")).stopReason).toBe("end_turn");
      // The agent said end_turn; the cause is in its log: the client gets the error.
      expect((await rejection(prompt(ctx, a, "log-quota"))).message).toContain("quota");
      const b = await openSession(ctx);
      await rejection(prompt(ctx, b, "error-gemini"));
      return [a, b];
    });
    expect((await p.exited).code).toBe(0);
    expect(p.stderr()).not.toContain("telemetry");
    const byName = (name: string) => r.spans.filter((x) => x.name === name);
    const roots = byName("session fake");
    const turns = byName("invoke_agent fake");
    expect(turns).toHaveLength(3);
    expect(roots).toHaveLength(2);
    const rootOf = (id: string) =>
      roots.find((x) => x.attributes["gen_ai.conversation.id"] === id)!;
    const [a, b] = sessions.map(rootOf);
    expect(a.attributes["turnguard.session.turns"]).toBe(2);
    expect(b.attributes["turnguard.session.turns"]).toBe(1);
    const turnsOf = (root: ReceivedSpan) =>
      turns.filter((t) => t.traceId === root.traceId && t.parentSpanId === root.spanId)
        .sort((x, y) =>
          Number(x.attributes["turnguard.turn"]) - Number(y.attributes["turnguard.turn"])
        );
    expect(a.traceId).not.toBe(b.traceId);
    expect(turnsOf(a).map((t) => [t.attributes["turnguard.status"], t.attributes["error.type"]]))
      .toEqual([["ok", undefined], ["failed", "quota"]]);
    expect(turnsOf(a)[1].attributes).toMatchObject({
      "gen_ai.conversation.id": sessions[0],
      "gen_ai.response.finish_reasons": ["end_turn"],
      "turnguard.stop_reason": "end_turn",
      "turnguard.swallowed": true,
      "turnguard.mode": "proxy",
    });
    expect(turnsOf(b).map((t) => t.attributes["turnguard.status"])).toEqual(["failed"]);
    expect(turnsOf(b)[0].status.code).toBe(2);
    expect(a.startMs).toBeLessThanOrEqual(turnsOf(a)[0].startMs);
    expect(r.logs).toHaveLength(3);
    for (const t of turns) {
      expect(r.logs.filter((l) => l.spanId === t.spanId && l.traceId === t.traceId)).toHaveLength(
        1,
      );
    }
  }, 60_000);

  test("a proxy retry links to the failed attempt, in the same session trace", async () => {
    const r = await receiver();
    const s = scratch();
    const journal = join(s.dir, "journal.jsonl");
    const p = track(
      binaryProxy(s, ["--journal", journal, "--retries", "1"], {
        OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      }),
    );
    await withClient(p, async (ctx) => {
      const id = await openSession(ctx);
      expect((await prompt(ctx, id, "flaky 1 error the answer")).stopReason).toBe("end_turn");
    });
    await p.exited;
    const turns = r.spans.filter((x) => x.name === "invoke_agent fake")
      .sort((x, y) => x.startMs - y.startMs);
    expect(turns.map((t) => [t.attributes["turnguard.attempt"], t.attributes["turnguard.status"]]))
      .toEqual([[0, "failed"], [1, "ok"]]);
    expect(turns[1].traceId).toBe(turns[0].traceId);
    expect(turns[1].links.map((l) => l.spanId)).toEqual([turns[0].spanId]);
  }, 60_000);

  test("a collector that never answers: every prompt answered, exit within the bound", async () => {
    const r = await receiver("silent");
    const s = scratch();
    const p = track(binaryProxy(s, [], { OTEL_EXPORTER_OTLP_ENDPOINT: r.url }));
    await withClient(p, async (ctx) => {
      const id = await openSession(ctx);
      for (let i = 0; i < 3; i++) {
        expect((await prompt(ctx, id, `echo ${i}`)).stopReason).toBe("end_turn");
      }
    });
    const closed = Date.now();
    expect((await p.exited).code).toBe(0);
    expect(Date.now() - closed).toBeLessThan(8000);
    expect(p.stderr()).toMatch(/turnguard: telemetry: \d+ of \d+ records were not exported/);
  }, 60_000);
});

describe("a long-running proxy says the first drop at once", () => {
  test("nothing listening: one line while it runs, the count at exit", async () => {
    const port = await closedPort();
    const s = scratch();
    const p = track(
      binaryProxy(s, [], { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` }),
    );
    const FIRST =
      /^turnguard: telemetry: records are being dropped: not exported to .*\(.+\); the count follows at exit$/;
    const lines = () => p.stderr().split("\n").filter(Boolean);
    await withClient(p, async (ctx) => {
      const id = await openSession(ctx);
      expect((await prompt(ctx, id, "echo one")).stopReason).toBe("end_turn");
      // The batch goes out within seconds; the proxy still runs (its stdin is open).
      for (let i = 0; i < 600 && !lines().some((l) => FIRST.test(l)); i++) await Bun.sleep(100);
      expect(lines()).toEqual([expect.stringMatching(FIRST)]);
      expect(p.child.exitCode).toBeNull();
      expect((await prompt(ctx, id, "echo two")).stopReason).toBe("end_turn");
    });
    expect((await p.exited).code).toBe(0);
    // Later drops are counted, not said again; the count comes at exit (two turns, a span
    // and a log record each, and the session's span).
    expect(lines()).toEqual([
      expect.stringMatching(FIRST),
      expect.stringMatching(/^turnguard: telemetry: 5 of 5 records were not exported to /),
    ]);
  }, 120_000);
});

describe("with export off, nothing of OpenTelemetry is loaded", () => {
  /** A preload that writes down every @opentelemetry module Bun loads. */
  function probe(dir: string): { preload: string; out: string } {
    const preload = join(dir, "probe.ts");
    const out = join(dir, "loaded.txt");
    writeFileSync(
      preload,
      `import { appendFileSync, readFileSync } from "node:fs";
Bun.plugin({
  name: "otel-load-probe",
  setup(build) {
    build.onLoad({ filter: /node_modules\\/@opentelemetry\\// }, (args) => {
      appendFileSync(${JSON.stringify(out)}, args.path + "\\n");
      return { contents: readFileSync(args.path, "utf8"), loader: "js" };
    });
  },
});
`,
    );
    return { preload, out };
  }
  const loaded = (out: string) => {
    try {
      return readFileSync(out, "utf8").split("\n").filter(Boolean).length;
    } catch {
      return 0;
    }
  };

  test("run: no module loaded when off; the probe sees them when on", async () => {
    const dir = freshHome();
    const { preload, out } = probe(dir);
    const argv = [BUN, "--preload", preload, MAIN, "run", "--", "true"];
    const off = await runProcess(argv, { env: homeEnv(dir, NO_OTEL) });
    expect([off.code, off.stderr]).toEqual([0, ""]);
    expect(loaded(out)).toBe(0);
    const port = await closedPort();
    const on = await runProcess(argv, {
      env: homeEnv(dir, {
        ...NO_OTEL,
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      }),
    });
    expect(on.code).toBe(0);
    expect(loaded(out)).toBeGreaterThan(0);
  }, 60_000);

  test("proxy: no module loaded when off, nor with OTEL_SDK_DISABLED=true", async () => {
    const s = scratch();
    const { preload, out } = probe(s.dir);
    const extras: Record<string, string>[] = [{}, {
      OTEL_SDK_DISABLED: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
    }];
    for (const extra of extras) {
      const p = track(
        startProxy(s, fakeArgs(s), [BUN, AGENT], extra, [BUN, "--preload", preload, MAIN]),
      );
      await withClient(p, async (ctx) => {
        const id = await openSession(ctx);
        expect((await prompt(ctx, id, "echo hi")).stopReason).toBe("end_turn");
      });
      expect((await p.exited).code).toBe(0);
    }
    expect(loaded(out)).toBe(0);
  }, 60_000);
});

describe("Deno from source", () => {
  test("run exports its turn", async () => {
    const r = await receiver();
    const res = await turnguard(["run", "--", FAKE_AGY], {
      runtime: "deno",
      env: homeEnv(freshHome(), { ...NO_OTEL, FAKE_AGY: "ok", OTEL_EXPORTER_OTLP_ENDPOINT: r.url }),
    });
    expect([res.code, res.stdout]).toEqual([0, "hi there\n"]);
    expect(r.spans.map((x) => x.attributes["turnguard.status"])).toEqual(["ok"]);
    expect(r.logs).toHaveLength(1);
  }, 60_000);
});
