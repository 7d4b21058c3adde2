/**
 * Live evidence and `--fail-fast` end to end: the SDK fake agent retries a failing request
 * silently for minutes, one log line per attempt (tests/fixtures/acp/agent.ts `retrying`),
 * behind `turnguard proxy` (a real child process), driven by the ACP SDK's client or by raw
 * lines where every byte counts.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  fakeArgs,
  killedAfterEach,
  openSession,
  prompt,
  type ProxyProcess,
  readOutcomes,
  rejection,
  type Scratch,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";

// Real processes on a shared 2-core machine: give each test room.
setDefaultTimeout(60_000);

const track = killedAfterEach();

function proxy(s: Scratch, extra: string[] = []): ProxyProcess {
  return track(startProxy(s, fakeArgs(s, ["--no-journal", ...extra])));
}

/** Generous smoke bound for "within a few seconds of the first attempt" on a loaded CI box. */
const FEW_SECONDS_MS = 15_000;

describe("--fail-fast", () => {
  test("a quota the agent retries blindly is answered with its true category in seconds", async () => {
    const s = scratch();
    const p = proxy(s, ["--fail-fast"]);
    const started = Date.now();
    const err = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await rejection(prompt(ctx, sessionId, "retrying quota"));
    });
    const took = Date.now() - started;
    // The agent would have retried for two minutes.
    expect(took).toBeLessThan(FEW_SECONDS_MS);
    expect(err.message).toContain("Individual quota reached");
    const data = (err.data as { turnguard: Record<string, unknown> }).turnguard;
    expect(data.category).toBe("quota");
    expect(data.status).toBe("failed");
    expect(String(data.endedEarly)).toContain("--fail-fast");
    const attempts = data.attempts as { n: number; category: string; retryable: boolean }[];
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    expect(attempts[0]).toMatchObject({ n: 1, category: "quota", retryable: false });
    await p.exited;
    const [o] = readOutcomes(s.outcomes);
    expect(o).toMatchObject({ status: "failed", error: { category: "quota" } });
    expect(o.endedEarly?.reason).toContain("quota");
    expect(o.agentAttempts?.[0]).toMatchObject({
      n: 1,
      category: "quota",
      source: { kind: "log" },
    });
  });

  test("exactly one answer per request: the agent's late cancelled answer is swallowed", async () => {
    const s = scratch();
    const p = proxy(s, ["--fail-fast"]);
    let out = "";
    p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
    const send = (m: unknown) => p.child.stdin!.write(JSON.stringify(m) + "\n");
    const lineWith = async (id: number) => {
      for (let i = 0; i < 600; i++) {
        const line = out.split("\n").find((l) =>
          l.includes(`"id":${id},`) || l.includes(`"id":${id}}`)
        );
        if (line) return JSON.parse(line);
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no answer to ${id}: ${out}`);
    };
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: 1, clientCapabilities: {} },
    });
    await lineWith(1);
    send({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/tmp", mcpServers: [] } });
    const sessionId = (await lineWith(2)).result.sessionId;
    send({
      jsonrpc: "2.0",
      id: 3,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "retrying quota" }] },
    });
    expect((await lineWith(3)).error.data.turnguard.category).toBe("quota");
    // The agent answers its cancel 200 ms later; the next prompt's answer comes after it.
    await new Promise((r) => setTimeout(r, 1500));
    send({
      jsonrpc: "2.0",
      id: 4,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "echo after" }] },
    });
    expect((await lineWith(4)).result.stopReason).toBe("end_turn");
    p.child.stdin!.end();
    await p.exited;
    const answers = out.split("\n").filter((l) => l.startsWith("{") && JSON.parse(l).id === 3);
    expect(answers.length).toBe(1);
    expect(out).not.toContain('"stopReason":"cancelled"');
  });

  test("a retryable cause is never cut short: a 503 retried runs to the agent's own answer", async () => {
    const s = scratch();
    const journal = join(s.dir, "journal.jsonl");
    const p = track(startProxy(s, fakeArgs(s, ["--journal", journal, "--fail-fast"])));
    const err = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await rejection(prompt(ctx, sessionId, "retrying 503 12"));
    });
    // The agent's own error after its 12 attempts, not turnguard's early answer.
    const data = (err.data as { turnguard: Record<string, unknown> }).turnguard;
    expect(data.category).toBe("capacity");
    expect(data.endedEarly).toBeUndefined();
    await p.exited;
    const [o] = readOutcomes(s.outcomes);
    expect(o.endedEarly).toBeUndefined();
    expect(o.agentAttempts?.length).toBeGreaterThanOrEqual(3);
    expect(o.agentAttempts?.[0]).toMatchObject({
      category: "capacity",
      retryable: true,
      nextInMs: 1000,
    });
    // Each attempt was journaled while the turn ran, before its end.
    const records = readFileSync(journal, "utf8").split("\n").filter((l) => l).map((l) =>
      JSON.parse(l)
    );
    const attempts = records.filter((r) => r.event === "agent_attempt");
    expect(attempts.length).toBe(o.agentAttempts?.length ?? -1);
    expect(attempts[0]).toMatchObject({ session: "sess-1", turn: 1, n: 1, category: "capacity" });
    expect(records.findIndex((r) => r.event === "agent_attempt")).toBeLessThan(
      records.findIndex((r) => r.event === "turn_ended"),
    );
  });

  /** A quota retried blindly, behind a proxy with no flag: how long until it is answered. */
  async function answeredIn(s: Scratch): Promise<{ ms: number; category: string }> {
    const p = proxy(s);
    const started = Date.now();
    const err = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await rejection(prompt(ctx, sessionId, "retrying quota 40"));
    });
    await p.exited;
    const data = (err.data as { turnguard: { category: string } }).turnguard;
    return { ms: Date.now() - started, category: data.category };
  }

  test("config: fail_fast = true globally, and a profile's own fail_fast wins", async () => {
    const s = scratch();
    const config = readFileSync(s.config, "utf8");
    writeFileSync(s.config, `fail_fast = true\n${config}`);
    const t = scratch();
    const own = readFileSync(t.config, "utf8").replace(
      "[agent.fake]\n",
      "[agent.fake]\nfail_fast = false\n",
    );
    writeFileSync(t.config, `fail_fast = true\n${own}`);
    // Two proxies side by side: each turn mostly waits on its agent's retries.
    const [global] = await Promise.all([answeredIn(s), answeredIn(t)]);
    expect(global.category).toBe("quota");
    expect(readOutcomes(s.outcomes)[0].endedEarly).toBeDefined();
    // The agent's own answer after its 40 attempts, which were seen: not ended early.
    const [o] = readOutcomes(t.outcomes);
    expect(o.endedEarly).toBeUndefined();
    expect(o.agentAttempts?.length).toBeGreaterThan(1);
  });
});

describe("without --fail-fast", () => {
  /** The client's bytes of one session whose agent retries a quota 8 times, then fails. */
  async function wire(s: Scratch, agent: string): Promise<string> {
    const p = track(startProxy(s, ["--config", s.config, "--agent", agent, "--no-journal"]));
    let out = "";
    p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
    await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      await rejection(prompt(ctx, sessionId, "retrying quota 8"));
    });
    await p.exited;
    return out;
  }

  test("the wire is byte for byte the same as with nothing followed", async () => {
    const s = scratch();
    // The same profile without logs: no live evidence at all. Its own scratch, so the two
    // sessions run side by side (each mostly waits on its agent's retries) with a log each.
    const b = scratch();
    appendFileSync(
      b.config,
      `\n[agent.blind]\nmatch = ["none"]\nlogs = []\nlog_format = "glog"\nanchors = ["fake.*"]\n`,
    );
    const [followed, blind] = await Promise.all([wire(s, "fake"), wire(b, "blind")]);
    expect(followed.length).toBeGreaterThan(0);
    expect(followed).toBe(blind);
    // The followed turn did see the attempts (the Outcome says so; the wire does not).
    expect(readFileSync(s.log, "utf8").split("\n").length).toBeGreaterThan(8);
  });
});

describe("--turn-timeout says what the agent was doing", () => {
  test("silent 2 s while retrying a 503: the error names the attempts", async () => {
    const s = scratch();
    const p = proxy(s, ["--turn-timeout", "2", "--grace", "1"]);
    const err = await withClient(p, async (ctx) => {
      const sessionId = await openSession(ctx);
      return await rejection(prompt(ctx, sessionId, "retrying 503"));
    });
    expect(err.message).toMatch(/the agent was retrying a 503 \(capacity\), attempt \d+/);
    await p.exited;
    const [o] = readOutcomes(s.outcomes);
    expect(o.error?.category).toBe("timeout");
    expect(o.error?.message).toMatch(/attempt \d+/);
    expect(o.agentAttempts?.length).toBeGreaterThan(0);
  });
});
