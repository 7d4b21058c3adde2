/**
 * A lost reply recovered: the agent's session records hold a final answer the client did
 * not receive. A real ACP client (the SDK) behind `turnguard proxy` in front of the fake
 * agent, which streams only the beginning of its answer and records all of it (Claude
 * Code's shape after a cut stream answered without streaming); and a recording of that
 * wire replayed. The Outcome carries the answer (`reply.recovered`); with
 * `--recover-replies` the client is sent what it lacks as the turn's last
 * `agent_message_chunk`, before the prompt's response.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import {
  killedAfterEach,
  messageText,
  openSession,
  profileArgs,
  prompt,
  readOutcomes,
  scratch,
  startProxy,
  withClient,
} from "../fixtures/acp/harness.ts";
import { replayRecording } from "../../lib/cli/replay.ts";
import { readTranscript } from "../agents/transcript.ts";
import { turnguardBinary } from "../agents/replay.ts";
import { ROOT } from "../helpers/cli.ts";
import type { Status } from "../../lib/core/outcome.ts";

setDefaultTimeout(60_000);
const track = killedAfterEach();

const ANSWER = "The answer is 4: two plus two makes four.";

/** One `records-shorter` turn through the proxy; what the client got, and the Outcome. */
async function lostTurn(extra: string[]) {
  const s = scratch();
  const p = track(
    startProxy(s, profileArgs(s, "claude", extra)),
  );
  const got = await withClient(p, async (ctx, updates) => {
    const sessionId = await openSession(ctx);
    const response = await prompt(ctx, sessionId, "records-shorter");
    const text = messageText(updates);
    return { response, text };
  });
  await p.exited;
  return { ...got, outcome: readOutcomes(s.outcomes)[0] };
}

describe("a final answer the client did not receive", () => {
  test("without --recover-replies: the Outcome carries it, the client's wire is untouched", async () => {
    const r = await lostTurn([]);
    expect(r.text).toBe("The answer is 4: two plus");
    expect(r.response).toEqual({ stopReason: "end_turn" });
    expect(r.outcome.status).toBe("truncated");
    expect(r.outcome.reply.recovered).toBe(ANSWER);
    expect(r.outcome.diagnostics.join("\n")).toContain("--recover-replies delivers it");
  });

  test("with --recover-replies: the client gets the rest before the response; the turn is ok", async () => {
    const r = await lostTurn(["--recover-replies"]);
    // The SDK client took the last chunk in before the prompt's response resolved.
    expect(r.text).toBe(ANSWER);
    expect(r.response).toEqual({ stopReason: "end_turn" });
    expect(r.outcome.status).toBe("ok");
    expect(r.outcome.error).toBeNull();
    expect(r.outcome.reply.recovered).toBe(ANSWER);
  });

  test("a clean turn: nothing recovered, nothing added", async () => {
    const s = scratch();
    const p = track(
      startProxy(s, profileArgs(s, "claude", ["--recover-replies"])),
    );
    const chunks = await withClient(p, async (ctx, updates) => {
      const sessionId = await openSession(ctx);
      await prompt(ctx, sessionId, "records-clean all good");
      return updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk").length;
    });
    await p.exited;
    expect(chunks).toBe(1);
    const [o] = readOutcomes(s.outcomes);
    expect(o.status).toBe("ok");
    expect(o.reply.recovered).toBeUndefined();
  });
});

describe("recordings of a lost reply, replayed", () => {
  const FIXTURES = join(ROOT, "tests", "fixtures", "recordings");
  const cases: [string, Status, string][] = [
    // The stream was cut after "The answer i"; the transcript holds the whole answer.
    ["claude_unsent_rest", "truncated", "s 4: two plus two makes four."],
    // Nothing streamed; the answer went only to the transcript.
    ["claude_unsent_all", "empty", ANSWER],
  ];
  for (const [name, status, rest] of cases) {
    test(`${name}: ${status} with reply.recovered; delivered, ok`, async () => {
      const path = join(FIXTURES, `${name}.jsonl`);
      const transcript = readTranscript(path);
      const plain = await replayRecording(path, transcript, {
        profile: "claude",
        config: null,
        self: [turnguardBinary()],
      });
      expect(plain.outcomes[0].status).toBe(status);
      expect(plain.outcomes[0].reply.recovered).toBe(ANSWER);
      const recorded = transcript.events.filter((e) => e.dir === "a2c").map((e) => e.line);
      expect(plain.received).toEqual(recorded);

      const delivered = await replayRecording(path, transcript, {
        profile: "claude",
        config: null,
        self: [turnguardBinary()],
        proxyArgs: ["--recover-replies"],
      });
      expect(delivered.outcomes[0].status).toBe("ok");
      // One line more than recorded: the recovered rest, right before the prompt's response.
      const at = recorded.findIndex((l) => JSON.parse(l).id === 2);
      expect(delivered.received.length).toBe(recorded.length + 1);
      expect(delivered.received.slice(0, at)).toEqual(recorded.slice(0, at));
      expect(JSON.parse(delivered.received[at]).params.update).toEqual({
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: rest },
      });
      expect(delivered.received[at + 1]).toBe(recorded[at]);
    });
  }
});

/**
 * Claude Code's non-streaming fallback, recorded with the real agents (corpus scenario
 * stream_cut_fallback): the stream is cut after "The answer is 4: two plus", Claude Code
 * retries without streaming, and the whole answer lands in its session file.
 */
describe("recordings of Claude Code's non-streaming fallback, replayed", () => {
  const CORPUS = join(ROOT, "tests", "agents", "corpus");
  /** The recording replayed through the proxy, without and with --recover-replies. */
  async function bothWays(agent: string) {
    const path = join(CORPUS, agent, "stream_cut_fallback.jsonl");
    const transcript = readTranscript(path);
    const options = { profile: "claude", config: null, self: [turnguardBinary()] };
    const plain = await replayRecording(path, transcript, options);
    const delivered = await replayRecording(path, transcript, {
      ...options,
      proxyArgs: ["--recover-replies"],
    });
    const recorded = transcript.events.filter((e) => e.dir === "a2c").map((e) => e.line);
    return { plain, delivered, recorded };
  }

  test("claude-code-acp drops the fallback's text: recovered, and delivered with the flag", async () => {
    const { plain, delivered, recorded } = await bothWays("claude-code-acp");
    expect(plain.outcomes.length).toBe(1);
    expect(plain.outcomes[0].status).toBe("truncated");
    expect(plain.outcomes[0].reply.text).toBe("The answer is 4: two plus");
    expect(plain.outcomes[0].reply.recovered).toBe(ANSWER);
    expect(plain.received).toEqual(recorded);

    expect(delivered.outcomes[0].status).toBe("ok");
    expect(delivered.outcomes[0].reply.recovered).toBe(ANSWER);
    // The rest the client lacks, as one chunk right before the prompt's response.
    const at = recorded.findIndex((l) => JSON.parse(l).id === 2);
    expect(delivered.received.length).toBe(recorded.length + 1);
    expect(delivered.received.slice(0, at)).toEqual(recorded.slice(0, at));
    expect(JSON.parse(delivered.received[at]).params.update).toEqual({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: " two makes four." },
    });
    expect(delivered.received.slice(at + 1)).toEqual(recorded.slice(at));
  });

  test("claude-code-acp's transcript written ten times as late: still delivered", async () => {
    // The answer lands 12 ms after the prompt's response as recorded; here 120 ms after.
    const path = join(CORPUS, "claude-code-acp", "stream_cut_fallback.jsonl");
    const transcript = readTranscript(path);
    const r = await replayRecording(path, transcript, {
      profile: "claude",
      config: null,
      self: [turnguardBinary()],
      lateFactor: 10,
      proxyArgs: ["--recover-replies"],
    });
    expect(r.outcomes[0].status).toBe("ok");
    const text = r.received.map((l) => JSON.parse(l)).filter((m) =>
      m.params?.update?.sessionUpdate === "agent_message_chunk"
    ).map((m) => m.params.update.content.text).join("");
    expect(text).toBe(ANSWER);
  });

  test("claude-agent-acp streams the fallback's rest itself: ok, nothing recovered or added", async () => {
    const { plain, delivered, recorded } = await bothWays("claude-agent-acp");
    for (const r of [plain, delivered]) {
      expect(r.outcomes.length).toBe(1);
      expect(r.outcomes[0].status).toBe("ok");
      expect(r.outcomes[0].reply.text).toBe(ANSWER);
      expect(r.outcomes[0].reply.recovered).toBeUndefined();
      expect(r.received).toEqual(recorded);
    }
  });
});
