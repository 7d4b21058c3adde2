/**
 * Session records end to end: `turnguard proxy` in front of the fake agent, which writes
 * Claude Code's transcript into HOME the way Claude Code does (the prompt at once, the
 * answer's records tens of milliseconds after it answered). The client always gets
 * `end_turn`; the records say whether the reply was whole.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { turnguard } from "../helpers/cli.ts";
import { MAX_LATE_WATCHES } from "../../lib/proxy/finish.ts";
import type * as acp from "@agentclientprotocol/sdk";
import { join } from "node:path";
import {
  killedAfterEach,
  openSession,
  prompt,
  type ProxyProcess,
  readOutcomes,
  type Scratch,
  scratch,
  startProxy,
  testEnv,
  withClient,
} from "../fixtures/acp/harness.ts";

setDefaultTimeout(30_000);
const track = killedAfterEach();

/** The proxy under the built-in `claude` profile (session records), or another one. */
function proxy(s: Scratch, extra: string[] = [], agent = "claude"): ProxyProcess {
  const args = ["--config", s.config, "--agent", agent, "--outcome-file", s.outcomes, ...extra];
  const p = startProxy(s, args);
  track(p);
  return p;
}

async function turns(s: Scratch, prompts: string[], extra: string[] = []) {
  const p = proxy(s, extra);
  const answers = await withClient(p, async (ctx) => {
    const sessionId = await openSession(ctx);
    const out: unknown[] = [];
    for (const text of prompts) {
      out.push(
        await prompt(ctx, sessionId, text).catch((err: acp.RequestError) => ({
          rejected: { code: err.code, message: err.message, data: err.data },
        })),
      );
    }
    return out;
  });
  await p.exited;
  return { answers, outcomes: readOutcomes(s.outcomes), stderr: p.stderr() };
}

describe("a reply cut off never looks complete", () => {
  test("a clean turn stays ok, error null, and its records are read", async () => {
    const s = scratch();
    const { answers, outcomes } = await turns(s, ["records-clean all good"]);
    expect(answers).toEqual([{ stopReason: "end_turn" }]);
    expect(outcomes[0]).toMatchObject({ status: "ok", error: null, reply: { text: "all good" } });
  });

  test("a stream cut mid-answer: truncated, partial text kept, cause from the transcript", async () => {
    const s = scratch();
    const { answers, outcomes } = await turns(s, ["records-cut"]);
    expect(answers).toEqual([{ stopReason: "end_turn" }]); // passes unchanged by default
    expect(outcomes[0]).toMatchObject({
      status: "truncated",
      reply: { text: "The answer is" },
      error: { category: "capacity", code: 529, anchor: "records:claude.transcript" },
      retry: { retryable: true },
    });
    expect(outcomes[0].error!.message).toStartWith("API Error: 529");
    expect(outcomes[0].error!.source!.path).toContain(join(".claude", "projects", "-tmp"));
  });

  test("nothing streamed and the transcript holds the error: failed, answered as an error", async () => {
    const s = scratch();
    const { answers, outcomes } = await turns(s, ["records-silent-cut"]);
    expect(answers[0]).toMatchObject({ rejected: { code: -32603 } });
    expect(outcomes[0]).toMatchObject({ status: "failed", error: { category: "rate_limit" } });
  });

  test("the output token limit the agent hid: truncated with its words", async () => {
    const s = scratch();
    const { outcomes } = await turns(s, ["records-max-tokens"]);
    expect(outcomes[0]).toMatchObject({
      status: "truncated",
      reply: { text: "A long answer that" },
    });
    expect(outcomes[0].error!.message).toContain("output token maximum");
  });

  test("a retry that completed the answer: ok, reply.text is the final attempt", async () => {
    const s = scratch();
    const { outcomes } = await turns(s, ["records-retried"]);
    expect(outcomes[0]).toMatchObject({
      status: "ok",
      error: null,
      reply: { text: "Here is the plan: first, read the file. Done." },
    });
    expect(outcomes[0].diagnostics.join("\n")).toContain("recovered");
  });

  test("a streamed reply shorter than the recorded answer: truncated", async () => {
    const s = scratch();
    const { outcomes } = await turns(s, ["records-shorter"]);
    expect(outcomes[0]).toMatchObject({
      status: "truncated",
      reply: { text: "The answer is 4: two plus" },
      error: { anchor: "wire" },
    });
    expect(outcomes[0].error!.message).toContain("25 of the 41 characters");
  });

  test("a clean turn after a failed one in the same session stays ok", async () => {
    const s = scratch();
    const { outcomes } = await turns(s, ["records-cut", "records-clean fine now"]);
    expect(outcomes.map((o) => [o.status, o.error?.message ?? null])).toEqual([
      ["truncated", expect.stringContaining("529")],
      ["ok", null],
    ]);
  });

  test("old errors in the session file are not this turn's", async () => {
    const s = scratch();
    const dir = join(s.home, ".claude", "projects", "-tmp");
    mkdirSync(dir, { recursive: true });
    appendFileSync(
      join(dir, "sess-1.jsonl"),
      JSON.stringify({
        sessionId: "sess-1",
        type: "assistant",
        isApiErrorMessage: true,
        error: "rate_limit",
        message: { content: [{ type: "text", text: "API Error: 429 old" }] },
      }) + "\n",
    );
    const { outcomes } = await turns(s, ["records-clean still fine"]);
    expect(outcomes[0]).toMatchObject({ status: "ok", error: null });
  });

  test("--strict-turns answers a cut reply as an error carrying the partial text", async () => {
    const s = scratch();
    const { answers, outcomes } = await turns(s, ["records-cut"], ["--strict-turns"]);
    const err = (answers[0] as {
      rejected: {
        code: number;
        message: string;
        data: { partialText: string; turnguard: Record<string, unknown> };
      };
    }).rejected;
    expect(err.code).toBe(-32603);
    expect(err.message).toStartWith("turn truncated: API Error: 529");
    expect(err.data.partialText).toBe("The answer is");
    expect(err.data.turnguard).toMatchObject({ status: "truncated", category: "capacity" });
    expect(outcomes[0].status).toBe("truncated");
  });
});

describe("wire contradictions (a profile without session records)", () => {
  async function fakeTurn(text: string, extra: string[] = []) {
    const s = scratch();
    const p = proxy(s, extra, "fake");
    const answer = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await prompt(ctx, sessionId, text).catch((err: acp.RequestError) => ({
        rejected: { code: err.code, message: err.message },
      }));
    });
    await p.exited;
    return { answer, outcome: readOutcomes(s.outcomes)[0] };
  }

  test("a reply re-streamed after a silent gap: ok, reply.text is the last attempt", async () => {
    const { answer, outcome } = await fakeTurn("restream");
    expect(answer).toEqual({ stopReason: "end_turn" });
    expect(outcome).toMatchObject({
      status: "ok",
      error: null,
      reply: { text: "Here is the plan: first, read the file. Done." },
    });
    expect(outcome.diagnostics.join("\n")).toContain("restarted 1 time(s)");
  });

  test("usage with no output for a turn that streamed text: truncated", async () => {
    const { answer, outcome } = await fakeTurn("zero-usage");
    expect(answer).toMatchObject({ stopReason: "end_turn" });
    expect(outcome).toMatchObject({
      status: "truncated",
      reply: { text: "half an ans" },
      error: { category: "unknown", anchor: "wire" },
    });
    expect(outcome.error!.message).toContain("0 output tokens");
  });

  test("an end_turn whose final message never got content: truncated; strict: an error", async () => {
    const plain = await fakeTurn("empty-final");
    expect(plain.outcome).toMatchObject({ status: "truncated", reply: { text: "Let me look." } });
    expect(plain.outcome.error!.message).toContain("final message (m2) had no content");
    const strict = await fakeTurn("empty-final", ["--strict-turns"]);
    expect(strict.answer).toMatchObject({ rejected: { code: -32603 } });
  });
});

describe("scan and explain read a session file", () => {
  const transcript = [
    { type: "user", message: { role: "user", content: "hi" } },
    { type: "assistant", message: { content: [{ type: "text", text: "The ans" }] } },
    {
      type: "assistant",
      isApiErrorMessage: true,
      error: "overloaded",
      message: { content: [{ type: "text", text: "API Error: 529 Overloaded" }] },
    },
  ].map((r) => JSON.stringify({ sessionId: "s", ...r })).join("\n") + "\n";

  test("scan --kind records: every event, then what the last turn shows", async () => {
    const s = scratch();
    const file = join(s.dir, "s.jsonl");
    writeFileSync(file, transcript);
    const r = await turnguard(["scan", "--kind", "records", "--agent", "claude", file], {
      env: testEnv(s),
      cwd: s.dir,
    });
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n")).toEqual([
      `${file}:1: claude.transcript prompt`,
      `${file}:2: claude.transcript reply final The ans`,
      `${file}:3: claude.transcript error API Error: 529 Overloaded`,
      `${file}: the last turn was cut: [capacity] API Error: 529 Overloaded`,
      "",
    ]);
  });

  test("explain --kind records reads the records given; without --agent: a usage error", async () => {
    const s = scratch();
    const r = await turnguard(["explain", "--kind", "records", "--agent", "claude", transcript], {
      env: testEnv(s),
      cwd: s.dir,
    });
    expect(r.stdout).toContain("<input>: the last turn was cut: [capacity]");
    const bad = await turnguard(["scan", "--kind", "records", "x.jsonl"], {
      env: testEnv(s),
      cwd: s.dir,
    });
    expect(bad.code).toBe(2);
  });
});

describe("the publish fallback never sends a cut reply", () => {
  const FIXTURES = join(import.meta.dirname ?? ".", "..", "fixtures", "publish");
  test("a truncated turn is not published; a re-streamed one publishes its last attempt", async () => {
    const s = scratch();
    const args = ["--publish-fallback", "--var", "channel=C1"];
    const q = startProxy(
      s,
      ["--config", s.config, "--agent", "fake", "--outcome-file", s.outcomes, ...args],
      undefined,
      { PATH: `${FIXTURES}:${process.env.PATH}`, BUZZ_RECORD_DIR: s.dir },
    );
    track(q);
    await withClient(q, async (ctx) => {
      const sessionId = await openSession(ctx);
      for (const text of ["zero-usage", "restream"]) {
        await ctx.request("session/prompt", {
          sessionId,
          prompt: [{ type: "text", text }],
          _meta: { turnguard: { reply_to: "E1" } },
        });
      }
    });
    await q.exited;
    const outcomes = readOutcomes(s.outcomes);
    expect(outcomes.map((o) => [o.status, o.publish?.fallback?.sent ?? null])).toEqual([
      ["truncated", null],
      ["ok", true],
    ]);
    const sent = readdirSync(s.dir).filter((f) => /^\d+\.stdin$/.test(f)).sort();
    expect(sent.map((f) => readFileSync(join(s.dir, f), "utf8"))).toEqual([
      "Here is the plan: first, read the file. Done.",
    ]);
  });
});

describe("wait says truncated", () => {
  test("wait --print shows the state, the cause and the partial reply; --json the status", async () => {
    const s = scratch();
    const journal = join(s.dir, "journal.jsonl");
    await turns(s, ["records-cut"], ["--journal", journal]);
    const env = testEnv(s);
    const printed = await turnguard(["wait", "claude", "--print", "--journal", journal], {
      env,
      cwd: s.dir,
    });
    expect(printed.stdout).toBe(
      "claude  ready: turn truncated\n" +
        'error: API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n' +
        "The answer is\n",
    );
    const json = await turnguard(["wait", "claude", "--json", "--journal", journal], {
      env,
      cwd: s.dir,
    });
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: "truncated",
      error: { category: "capacity" },
      reply: "The answer is",
    });
  });
});

describe("a user's own agent: its records and its reader plugin", () => {
  test("a code plugin's reader reads the profile's session records, in its worker", async () => {
    const s = scratch();
    writeFileSync(
      join(s.dir, "reader.js"),
      `export default { readers: [{ id: "mine.log", agents: ["mine"], read(r) {
        if (r.kind === "ask") return { kind: "prompt" };
        if (r.kind === "oops") return { kind: "error", cause: "backend said: " + r.why };
        return null;
      } }] };\n`,
    );
    const config = join(s.dir, "mine.toml");
    writeFileSync(
      config,
      `plugins = ["reader.js"]\n[agent.mine]\nsession_records = ["$HOME/mine/{session}.jsonl"]\n`,
    );
    const file = join(s.dir, "s1.jsonl");
    writeFileSync(file, '{"kind":"ask"}\n{"kind":"oops","why":"quota gone"}\n');
    const r = await turnguard(
      ["scan", "--config", config, "--kind", "records", "--agent", "mine", file],
      { env: testEnv(s), cwd: s.dir },
    );
    expect(r.stdout).toContain(`${file}:2: mine.log error backend said: quota gone`);
    expect(r.stdout).toContain("the last turn was cut");
    const check = await turnguard(["check", "--verbose", "--config", config], {
      env: testEnv(s),
      cwd: s.dir,
    });
    expect(check.stdout).toContain("session records (settle 100 ms; readers mine.log)");
  });
});

describe("records whose end never lands: watched late, within bounds", () => {
  test("one late watch per session (a newer turn's ends the older), at most MAX_LATE_WATCHES", async () => {
    const s = scratch();
    appendFileSync(s.config, "\n[agent.claude]\nrecords_wait_ms = 50\n");
    const p = proxy(s, ["--verbose"]);
    await withClient(p, async (ctx) => {
      const first = await openSession(ctx);
      await prompt(ctx, first, "records-no-end one");
      await prompt(ctx, first, "records-no-end two");
      // Sessions watched: the first, then MAX_LATE_WATCHES more; the last finds no room.
      for (let i = 0; i < MAX_LATE_WATCHES; i++) {
        await prompt(ctx, await openSession(ctx), "records-no-end other");
      }
    });
    await p.exited;
    const err = p.stderr();
    expect(err).toMatch(/turn 1: its late watch gives way to turn 2's/);
    expect(err.match(/its late watch gives way/g)?.length).toBe(1);
    expect(err.match(/not watched late \(16 sessions are watched already\)/g)?.length).toBe(1);
    expect(readOutcomes(s.outcomes).length).toBe(2 + MAX_LATE_WATCHES);
  });
});
