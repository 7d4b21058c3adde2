/**
 * OTLP export end to end: the compiled binary (`run` and `proxy`) sends each turn to a local
 * OTLP/HTTP receiver (protobuf by default, JSON when asked), one `invoke_agent` span per turn
 * with each attempt a child; a collector that is down or never answers costs at most the
 * flush bound; an unsupported protocol is one line; with export off the OpenTelemetry
 * modules are never loaded; Deno from source exports too.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { BUN, FAKE_AGY, homeEnv, MAIN, ROOT, runProcess, turnguard } from "../helpers/cli.ts";
import { type Receiver, startReceiver } from "../helpers/otlp_receiver.ts";
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
    "a swallowed quota failure: a turn span, its attempt, one log record, the documented attributes",
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
      expect(r.rejected).toEqual([]);
      // http/protobuf unless asked otherwise.
      expect(r.requests.map((q) => q.headers["content-type"])).toEqual([
        "application/x-protobuf",
        "application/x-protobuf",
      ]);
      expect(r.spans).toHaveLength(2);
      expect(r.logs).toHaveLength(1);
      const span = r.spans.find((s) => s.name === "invoke_agent agy")!;
      const attempt = r.spans.find((s) => s.name === "attempt agy")!;
      const [log] = r.logs;
      expect(span.status).toMatchObject({ code: 2 }); // ERROR
      expect(span.status.message).toMatch(/^quota: .*RESOURCE_EXHAUSTED/);
      expect(span.endMs).toBeGreaterThanOrEqual(span.startMs);
      expect(span.parentSpanId).toBe("");
      expect([attempt.traceId, attempt.parentSpanId]).toEqual([span.traceId, span.spanId]);
      expect(attempt.status).toEqual(span.status);
      expect(span.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "agy",
        "gen_ai.provider.name": "gcp.gen_ai",
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
        "turnguard.attempts": 1,
      });
      expect(attempt.attributes["gen_ai.provider.name"]).toBe("gcp.gen_ai");
      expect(span.attributes["gen_ai.conversation.id"]).toMatch(/^run-\d+-/);
      expect(span.attributes["turnguard.retry.after_ms"]).toBeGreaterThan(0);
      expect(span.resource).toMatchObject({
        "service.name": "ci-agents",
        "service.version": "0.1.0",
        "deployment.environment.name": "test",
      });
      // The log record is the Outcome, in the turn span's context.
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

  test("http/json when asked: the same records", async () => {
    const r = await receiver();
    const res = await run(["--", FAKE_AGY], {
      ...NO_OTEL,
      FAKE_AGY: "ok",
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    });
    expect([res.code, res.stderr]).toEqual([0, ""]);
    expect(r.requests.map((q) => q.headers["content-type"])).toEqual([
      "application/json",
      "application/json",
    ]);
    expect(r.spans.map((s) => [s.name, s.attributes["turnguard.status"]]).sort()).toEqual([
      ["attempt agy", "ok"],
      ["invoke_agent agy", "ok"],
    ]);
    expect(r.logs.map((l) => l.severityText)).toEqual(["INFO"]);
  }, 60_000);

  test("an unsupported protocol: one line on stderr, nothing sent, the turn unharmed", async () => {
    const r = await receiver();
    const res = await run(["--", FAKE_AGY], {
      ...NO_OTEL,
      FAKE_AGY: "ok",
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
    });
    expect([res.code, res.stdout]).toEqual([0, "hi there\n"]);
    expect(res.stderr).toBe(
      'turnguard: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported (only ' +
        "http/protobuf and http/json); nothing is exported over it\n",
    );
    expect(r.requests).toEqual([]);
  }, 60_000);

  test("a turn that succeeds on retry: one OK turn span, each attempt a child", async () => {
    const r = await receiver();
    const res = await run(["--retries", "1", "--", FLAKY], {
      ...NO_OTEL,
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      FLAKY_COUNTER: join(tmpdir(), `tg-otel-flaky-${process.pid}-${Date.now()}`),
      FLAKY_PLAN: "hint,ok",
    });
    expect([res.code, res.stdout]).toEqual([0, "the answer\n"]);
    const turns = r.spans.filter((s) => s.name.startsWith("invoke_agent "));
    const attempts = r.spans.filter((s) => s.name.startsWith("attempt "))
      .sort((a, b) => a.startMs - b.startMs);
    expect([turns.length, attempts.length]).toEqual([1, 2]);
    const [turn] = turns;
    expect(turn.parentSpanId).toBe("");
    expect(turn.status.code ?? 0).toBe(0); // the turn recovered: not an ERROR root span
    expect(turn.attributes).toMatchObject({
      "turnguard.status": "ok",
      "turnguard.attempt": 1,
      "turnguard.attempts": 2,
    });
    expect(attempts.map((a) => [a.attributes["turnguard.attempt"], a.status.code ?? 0]))
      .toEqual([[0, 2], [1, 0]]);
    for (const a of attempts) {
      expect([a.traceId, a.parentSpanId]).toEqual([turn.traceId, turn.spanId]);
      expect(a.attributes["gen_ai.conversation.id"]).toBe(
        turn.attributes["gen_ai.conversation.id"],
      );
    }
    expect([turn.startMs, turn.endMs]).toEqual([attempts[0].startMs, attempts[1].endMs]);
    // One log record for the turn: its final status.
    expect(r.logs.map((l) => [l.severityText, l.spanId])).toEqual([["INFO", turn.spanId]]);
  }, 60_000);

  /** `run --retries 1` of the flaky agent whose first step asks for a 100 s wait. */
  async function waitingRetry(
    r: Receiver,
    then: (
      child: { kill(signal: NodeJS.Signals): boolean },
      env: Record<string, string | undefined>,
    ) => void,
  ) {
    const dir = freshHome();
    const journal = join(dir, "journal.jsonl");
    const env = homeEnv(dir, {
      ...NO_OTEL,
      OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
      TURNGUARD_JOURNAL: journal,
      FLAKY_COUNTER: join(dir, "counter"),
      FLAKY_PLAN: "longhint,ok",
    });
    const scheduled = () =>
      existsSync(journal) && readFileSync(journal, "utf8").includes("retry_scheduled");
    return await runProcess(
      [binary, "run", "--name", "w1", "--retries", "1", "--retry-max-wait", "200", "--", FLAKY],
      {
        env,
        onSpawn: (c) =>
          void (async () => {
            for (let i = 0; i < 600 && !scheduled(); i++) await Bun.sleep(50);
            then(c, env);
          })(),
      },
    );
  }

  test("turnguard retry runs the waiting retry now: one OK turn span, two attempts", async () => {
    const r = await receiver();
    const res = await waitingRetry(r, (_child, env) => {
      void runProcess([binary, "retry", "w1"], { env });
    });
    expect([res.code, res.stdout]).toEqual([0, "the answer\n"]);
    const turns = r.spans.filter((s) => s.name.startsWith("invoke_agent "));
    const attempts = r.spans.filter((s) => s.name.startsWith("attempt "));
    expect(turns.map((t) => [t.status.code ?? 0, t.attributes["turnguard.attempts"]])).toEqual([
      [0, 2],
    ]);
    expect(attempts.map((a) => a.parentSpanId)).toEqual([turns[0].spanId, turns[0].spanId]);
  }, 60_000);

  test("a waiting retry stopped by SIGTERM: the turn ends ERROR with its one attempt", async () => {
    const r = await receiver();
    const res = await waitingRetry(r, (child) => void child.kill("SIGTERM"));
    expect(res.code).toBe(1);
    const turns = r.spans.filter((s) => s.name.startsWith("invoke_agent "));
    expect(turns.map((t) => [t.status.code, t.attributes["turnguard.attempts"]])).toEqual([
      [2, 1],
    ]);
    expect(r.spans.filter((s) => s.parentSpanId === turns[0].spanId)).toHaveLength(1);
    expect(r.logs.map((l) => l.severityText)).toEqual(["ERROR"]);
  }, 60_000);

  test("reply text: absent by default, redacted with include_reply", async () => {
    const secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz";
    const agent = join(mkdtempSync(join(tmpdir(), "tg-otel-agent-")), "talker");
    writeFileSync(agent, `#!/bin/sh\necho "the key is ${secret}, enjoy"\n`, { mode: 0o755 });
    const off = await receiver();
    await run(["--", agent], { ...NO_OTEL, OTEL_EXPORTER_OTLP_ENDPOINT: off.url });
    expect(off.spans).toHaveLength(2);
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
            `^turnguard: telemetry: 3 of 3 records were not exported to http://bob:\\[REDACTED:url\\]@127\\.0\\.0\\.1:${port}/v1/traces, .*\\(.+\\)$`,
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
    writeFileSync(config, `[telemetry]\nendpoint = "${r.url}"\nflush_timeout_ms = 500\n`);
    const started = Date.now();
    // The agent takes a while, so that the exporter is loaded (on a busy machine too), and
    // the bound leaves the records time to be on their way when it cuts the wait.
    const agent = ["--agent", "agy", "--", "sh", "-c", `sleep 2 && exec "${FAKE_AGY}"`];
    const res = await runProcess([binary, "run", "--config", config, ...agent], {
      env: homeEnv(dir, { ...NO_OTEL, FAKE_AGY: "quota" }),
    });
    const took = Date.now() - started - 2000;
    expect(res.code).toBe(1);
    expect(r.requests.length).toBeGreaterThan(0); // the records were on their way
    expect(res.stderr).toContain(
      "records were not exported to " + `${r.url}/v1/traces, ${r.url}/v1/logs ` +
        "(no answer from the collector within the 500 ms flush bound)",
    );
    expect(took).toBeLessThan(BOUND_SMOKE_MS);
  }, 60_000);
});

/** Starts the compiled binary as a proxy in front of the fake ACP agent. */
function binaryProxy(s: Scratch, args: string[], env: Record<string, string>): ProxyProcess {
  return startProxy(s, fakeArgs(s, args), [BUN, AGENT], env, [binary]);
}

const track = killedAfterEach();

describe("turnguard proxy exports each turn, one trace per turn", () => {
  test("each turn is a root span with its session as gen_ai.conversation.id", async () => {
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
    const turns = r.spans.filter((x) => x.name === "invoke_agent fake");
    const attempts = r.spans.filter((x) => x.name === "attempt fake");
    expect([turns.length, attempts.length, r.spans.length]).toEqual([3, 3, 6]);
    for (const t of turns) {
      expect(t.parentSpanId).toBe("");
      // The fake agent has no known provider: the documented value.
      expect(t.attributes["gen_ai.provider.name"]).toBe("_OTHER");
      const children = attempts.filter((a) => a.parentSpanId === t.spanId);
      expect(children.map((c) => c.traceId)).toEqual([t.traceId]);
      expect(children[0].attributes["gen_ai.provider.name"]).toBe("_OTHER");
    }
    expect(new Set(turns.map((t) => t.traceId)).size).toBe(3);
    const turnsOf = (id: string) =>
      turns.filter((t) => t.attributes["gen_ai.conversation.id"] === id)
        .sort((x, y) =>
          Number(x.attributes["turnguard.turn"]) - Number(y.attributes["turnguard.turn"])
        );
    const [a, b] = sessions.map(turnsOf);
    expect(a.map((t) => [t.attributes["turnguard.status"], t.attributes["error.type"]]))
      .toEqual([["ok", undefined], ["failed", "quota"]]);
    expect(a[1].attributes).toMatchObject({
      "gen_ai.response.finish_reasons": ["end_turn"],
      "turnguard.stop_reason": "end_turn",
      "turnguard.swallowed": true,
      "turnguard.mode": "proxy",
    });
    expect(a[1].status.code).toBe(2);
    expect(b.map((t) => [t.attributes["turnguard.status"], t.status.code])).toEqual([
      ["failed", 2],
    ]);
    expect(r.logs).toHaveLength(3);
    for (const t of turns) {
      expect(r.logs.filter((l) => l.spanId === t.spanId && l.traceId === t.traceId)).toHaveLength(
        1,
      );
    }
  }, 60_000);

  test("a proxy retry: the attempts are children of one turn span, OK at the end", async () => {
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
    const turns = r.spans.filter((x) => x.name === "invoke_agent fake");
    const attempts = r.spans.filter((x) => x.name === "attempt fake")
      .sort((x, y) => x.startMs - y.startMs);
    expect(turns).toHaveLength(1);
    expect(turns[0].status.code ?? 0).toBe(0);
    expect(turns[0].attributes).toMatchObject({
      "turnguard.status": "ok",
      "turnguard.attempts": 2,
    });
    expect(
      attempts.map((t) => [t.attributes["turnguard.attempt"], t.attributes["turnguard.status"]]),
    )
      .toEqual([[0, "failed"], [1, "ok"]]);
    expect(attempts.map((a) => a.parentSpanId)).toEqual([turns[0].spanId, turns[0].spanId]);
    expect(r.logs.map((l) => l.severityText)).toEqual(["INFO"]);
  }, 60_000);

  test(
    "an agent retrying on its own: one agent_attempt event per attempt on the turn span",
    async () => {
      const r = await receiver();
      const s = scratch();
      const p = track(binaryProxy(s, [], { OTEL_EXPORTER_OTLP_ENDPOINT: r.url }));
      await withClient(p, async (ctx) => {
        const id = await openSession(ctx);
        // Six attempts, one log line each every 300 ms, then the agent fails the prompt.
        expect((await rejection(prompt(ctx, id, "retrying 503 6"))).message).toContain(
          "overloaded",
        );
      });
      await p.exited;
      const [turn] = r.spans.filter((x) => x.name === "invoke_agent fake");
      const seen = turn.attributes["turnguard.agent_attempts"] as number;
      expect(seen).toBeGreaterThanOrEqual(1);
      expect(turn.events).toHaveLength(seen);
      expect(turn.events.map((e) => e.attributes["turnguard.agent_attempt.number"]))
        .toEqual(Array.from({ length: seen }, (_, i) => i + 1));
      for (const e of turn.events) {
        expect(e.name).toBe("turnguard.agent_attempt");
        expect(e.attributes).toMatchObject({
          "error.type": "capacity",
          "turnguard.agent_attempt.retryable": true,
          "turnguard.agent_attempt.source": "log",
        });
        expect(e.timeMs).toBeGreaterThanOrEqual(turn.startMs);
        expect(e.timeMs).toBeLessThanOrEqual(turn.endMs);
      }
      const events = r.logs.filter((l) => l.eventName === "turnguard.agent_attempt");
      expect(events.map((l) => [l.traceId, l.spanId, l.timeMs])).toEqual(
        turn.events.map((e) => [turn.traceId, turn.spanId, e.timeMs]),
      );
    },
    60_000,
  );

  test("a key in the agent's stopReason is redacted on its way out", async () => {
    const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123";
    const r = await receiver();
    const s = scratch();
    const p = track(binaryProxy(s, [], { OTEL_EXPORTER_OTLP_ENDPOINT: r.url }));
    await withClient(p, async (ctx) => {
      const id = await openSession(ctx);
      // The client may refuse a stop reason it does not know; the turn is exported anyway.
      await prompt(ctx, id, `stop ${key}`).catch(() => null);
    });
    await p.exited;
    expect(r.rejected).toEqual([]);
    const [turn] = r.spans.filter((x) => x.name === "invoke_agent fake");
    expect(turn.attributes["turnguard.stop_reason"]).toBe("[REDACTED:anthropic]");
    expect(turn.attributes["gen_ai.response.finish_reasons"]).toEqual(["[REDACTED:anthropic]"]);
    expect(r.raw.join("\n")).not.toContain("abcdefghijklmnopqrstuvwxyz0123");
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
    // Later drops are counted, not said again; the count comes at exit (two turns: the
    // turn's span, its attempt's span and its log record each).
    expect(lines()).toEqual([
      expect.stringMatching(FIRST),
      expect.stringMatching(/^turnguard: telemetry: 6 of 6 records were not exported to /),
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
    expect(r.spans.map((x) => x.attributes["turnguard.status"])).toEqual(["ok", "ok"]);
    expect(r.logs).toHaveLength(1);
  }, 60_000);
});
