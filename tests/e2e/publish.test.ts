/**
 * The publish fallback end to end: the ACP SDK's client talks through `turnguard proxy`
 * (a real child process) to a fake SDK agent; a fake `buzz` on PATH records every message
 * it is given, whoever sends it.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  BUN,
  fakeArgs,
  killedAfterEach,
  openSession,
  type ProxyProcess,
  readOutcomes,
  type Scratch,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";

const FIXTURES = resolve(import.meta.dirname ?? ".", "..", "fixtures", "publish");
const AGENT = join(FIXTURES, "agent.ts");

const track = killedAfterEach();

/** Starts the proxy in front of the publishing fake agent, buzz on PATH, fallback armed. */
function proxy(
  s: Scratch,
  extra: string[] = ["--publish-fallback", "--var", "channel=C1"],
  env: Record<string, string> = {},
) {
  const p = startProxy(s, fakeArgs(s, extra), [BUN, AGENT], {
    PATH: `${FIXTURES}:${process.env.PATH}`,
    BUZZ_RECORD_DIR: s.dir,
    ...env,
  });
  track(p);
  return p;
}

/** The messages the fake buzz received, in order. */
function received(s: Scratch): Array<{ argv: string[]; stdin: string }> {
  const n = readdirSync(s.dir).filter((f) => /^\d+\.argv$/.test(f)).length;
  return Array.from({ length: n }, (_, i) => ({
    argv: readFileSync(join(s.dir, `${i}.argv`), "utf8").slice(0, -1).split("\0"),
    stdin: readFileSync(join(s.dir, `${i}.stdin`), "utf8"),
  }));
}

/** One session, one prompt per scenario; `_meta.turnguard` threads the reply. */
function turns(p: ProxyProcess, s: Scratch, scenarios: string[]) {
  return withClient(p, async (ctx) => {
    const sessionId = await openSession(ctx);
    const seen: Array<{ stopReason: string; messages: number }> = [];
    for (const text of scenarios) {
      const response = await ctx.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text }],
        _meta: { turnguard: { reply_to: "E1" } },
      });
      // The response is forwarded only after the fallback finished: its message is there.
      seen.push({ stopReason: response.stopReason, messages: received(s).length });
    }
    return seen;
  });
}

const FORGOTTEN = "The answer is 42.\nQuotes ' \" and $(not a command) stay as they are.";

describe("publish fallback through the proxy", () => {
  test("a forgetful turn: exactly one message, threaded to the right --reply-to", async () => {
    const s = scratch();
    const p = proxy(s);
    expect(await turns(p, s, ["forgetful"])).toEqual([{ stopReason: "end_turn", messages: 1 }]);
    expect(await p.exited).toEqual({ code: 0, signal: null });
    expect(received(s)).toEqual([{
      argv: ["messages", "send", "--channel", "C1", "--reply-to", "E1", "--content", "-"],
      stdin: FORGOTTEN,
    }]);
    const [o] = readOutcomes(s.outcomes);
    expect(o.status).toBe("ok");
    expect(o.publish).toEqual({
      armed: true,
      detected: false,
      detector: null,
      channel: "C1",
      fallback: { sent: true, exitCode: 0 },
    });
    expect(o.diagnostics).toContain(
      "publish: the agent did not publish its reply; turnguard sent it with buzz",
    );
  });

  test("a turn that published: none from turnguard (only the agent's own)", async () => {
    const s = scratch();
    const p = proxy(s);
    expect(await turns(p, s, ["published"])).toEqual([{ stopReason: "end_turn", messages: 1 }]);
    await p.exited;
    expect(received(s)).toEqual([{
      argv: ["messages", "send", "--channel", "C1", "--reply-to", "E1", "--content", "-"],
      stdin: "Posted by the agent itself.",
    }]);
    const [o] = readOutcomes(s.outcomes);
    expect(o.publish).toEqual({
      armed: true,
      detected: true,
      detector: "buzz",
      channel: "C1",
      fallback: null,
    });
  });

  test("a failed publish, a refusal and a forgetful turn in one session", async () => {
    const s = scratch();
    const p = proxy(s);
    expect(await turns(p, s, ["failed-publish", "refusal", "forgetful"])).toEqual([
      { stopReason: "end_turn", messages: 1 },
      { stopReason: "refusal", messages: 1 },
      { stopReason: "end_turn", messages: 2 },
    ]);
    await p.exited;
    expect(received(s).map((m) => m.stdin)).toEqual([
      "The reply the relay never got.",
      FORGOTTEN,
    ]);
    const outcomes = readOutcomes(s.outcomes);
    expect(outcomes.map((o) => [o.status, o.publish?.detected, o.publish?.fallback?.sent])).toEqual(
      [
        ["ok", false, true],
        ["refused", false, undefined],
        ["ok", false, true],
      ],
    );
    expect(outcomes[0].diagnostics).toContain(
      "publish: buzz saw tool call call-2 publish, but it did not succeed (exit code 1 (rawOutput.exit_code))",
    );
  });

  test("a fallback that fails: one stderr line says the reply was not published, and why", async () => {
    const s = scratch();
    const p = proxy(s, undefined, {
      BUZZ_EXIT: "1",
      BUZZ_STDERR: "relay refused: token=Zq7Xw2Lm9Pk4Rt6Yv1Hn8Bc3",
    });
    expect(await turns(p, s, ["forgetful", "forgetful"])).toEqual([
      { stopReason: "end_turn", messages: 1 },
      { stopReason: "end_turn", messages: 2 },
    ]);
    await p.exited;
    const line =
      "turnguard: publish: the fallback buzz exited with status 1: relay refused: token=[REDACTED:param]; the reply was not published (not retried)";
    // Once per turn; the fallback's own stderr is in the Outcome, not on turnguard's stderr.
    expect(p.stderr()).toBe(`${line}\n`.repeat(2));
  });

  test("disarmed: nothing sent and publish is null", async () => {
    const s = scratch();
    const p = proxy(s, []);
    expect(await turns(p, s, ["forgetful"])).toEqual([{ stopReason: "end_turn", messages: 0 }]);
    await p.exited;
    expect(readOutcomes(s.outcomes)[0].publish).toBeNull();
  });

  test("a bad --var is a usage error before the agent starts", async () => {
    const s = scratch();
    const p = proxy(s, ["--publish-fallback", "--var", "oops"]);
    expect(await p.exited).toEqual({ code: 125, signal: null });
    expect(p.stderr()).toBe(
      'turnguard: --var: expected NAME=VALUE with NAME of letters, digits and _, got "oops"\n',
    );
  });
});
