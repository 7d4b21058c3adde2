/**
 * `ClientAnswers` (lib/proxy/answers.ts), the shell of the one answering place: what reaches
 * the client for the ways in others build on — a prompt answered now (fail-fast), a line
 * sent before a prompt's response (a recovered reply) — and for the agent's exit. Real turns,
 * requests and line output; the turn's end is a stand-in that says what it was asked.
 */
import { describe, expect, test } from "bun:test";
import { PendingRequests } from "../../../lib/acp/tracker.ts";
import { readMessage } from "../../../lib/acp/jsonrpc.ts";
import { SessionCwds } from "../../../lib/acp/session_cwds.ts";
import { ClientAnswers, type TurnEnder } from "../../../lib/proxy/answers.ts";
import type { TurnEnd } from "../../../lib/proxy/conclude.ts";
import { LineOutput } from "../../../lib/proxy/output.ts";
import type { ProxyState } from "../../../lib/proxy/state.ts";
import { type Turn, Turns } from "../../../lib/proxy/turns.ts";
import { dec, enc, snapshot } from "../../helpers/units.ts";

/** A proxy's state with what the answers touch; the client's bytes and the log collected. */
function setup() {
  const sent: string[] = [];
  const said: string[] = [];
  const sink = { write: (b: Uint8Array) => (sent.push(dec(b)), true), end: () => {}, on: () => {} };
  const state = {
    now: () => 5000,
    log: (line: string) => said.push(line),
    toClient: new LineOutput(sink),
    turns: new Turns(),
    clientPending: new PendingRequests(),
    sessionCwds: new SessionCwds(),
    inFlight: new Set<Promise<void>>(),
    clientGone: false,
    signalled: false,
  } as unknown as ProxyState;
  const ended: { end: TurnEnd; line: string | null }[] = [];
  const ender: TurnEnder = {
    // The turn's end answers with what it was given, or a made-up line naming its end.
    finish: (_turn, end, line) => {
      ended.push({ end, line: line && dec(line) });
      return Promise.resolve(line ?? enc(`{"ended":"${end.kind}"}\n`));
    },
    forwarded: () => Promise.resolve(null),
  };
  const answers = new ClientAnswers(state, ender);
  const prompt = (id: number): Turn => {
    answers.request(id, "session/prompt", "s1");
    return state.turns.start({
      sessionId: "s1",
      requestId: id,
      promptLine: null,
      promptMeta: undefined,
      startedAt: 1000,
      snapshot,
      trackToolCalls: false,
      keepText: "reply",
    });
  };
  const settled = async () => {
    while (state.inFlight.size > 0) await Promise.all([...state.inFlight]);
  };
  return { state, answers, sent, said, ended, prompt, settled };
}

const response = (line: string) => {
  const m = readMessage(enc(line));
  if (m?.kind !== "result" && m?.kind !== "error") throw new Error("not a response");
  return m;
};

describe("ClientAnswers", () => {
  test("answerNow answers a prompt at once; the agent's later response is swallowed", async () => {
    const { answers, sent, said, ended, prompt, settled } = setup();
    const turn = prompt(7);
    const end: TurnEnd = { kind: "timeout", silentMs: 1 };
    expect(answers.answerNow(turn, end, 5000)).toBe(true);
    await settled();
    expect(ended).toEqual([{ end, line: null }]);
    expect(sent).toEqual(['{"ended":"timeout"}\n']);
    // Twice is once.
    expect(answers.answerNow(turn, end, 5000)).toBe(false);
    const late = '{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}\n';
    expect(answers.response(response(late), enc(late), 5000)).toEqual({ replace: null });
    expect(said).toEqual(["dropped the agent's late response to request n7"]);
  });

  test("before: the line goes out right before the prompt's response", async () => {
    const { answers, sent, prompt } = setup();
    const turn = prompt(7);
    answers.before(turn, enc('{"recovered":1}\n'));
    const line = '{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}\n';
    const verdict = answers.response(response(line), enc(line), 5000);
    expect(verdict).toHaveProperty("later");
    const bytes = await (verdict as { later: Promise<Uint8Array | null> }).later;
    expect(dec(bytes!)).toBe('{"recovered":1}\n' + line);
    expect(sent).toEqual([]);
  });

  test("before: also when turnguard answers (the agent died)", async () => {
    const { answers, sent, prompt, settled } = setup();
    const turn = prompt(7);
    answers.before(turn, enc('{"recovered":1}\n'));
    answers.exited(1, null, "boom", 5000);
    await settled();
    expect(sent).toEqual(['{"recovered":1}\n{"ended":"exit"}\n']);
  });

  test("the agent exited: each request still waiting is answered once", async () => {
    const { answers, sent, ended, prompt, settled } = setup();
    answers.request(1, "session/new", null);
    prompt(7);
    const answered = '{"jsonrpc":"2.0","id":2,"result":{}}\n';
    answers.request(2, "initialize", null);
    answers.response(response(answered), enc(answered), 5000);
    answers.exited(3, null, "boom", 5000);
    await settled();
    expect(ended.map((e) => e.end.kind)).toEqual(["exit"]);
    expect(sent.map((l) => JSON.parse(l))).toEqual([
      {
        jsonrpc: "2.0",
        id: 1,
        error: {
          code: -32603,
          message: "agent exited with status 3: boom",
          data: { turnguard: expect.objectContaining({ category: "crash" }) },
        },
      },
      { ended: "exit" },
    ]);
    // Nothing waits any more.
    answers.exited(3, null, "boom", 5000);
    await settled();
    expect(sent).toHaveLength(2);
  });
});
