/**
 * `--fail-fast` on recorded agents that retry a spent quota blindly (the corpus's
 * `quota_daily`: the mock answered every request 429 `insufficient_quota`): opencode 1.18.33
 * retried silently, one ERROR line of its log per attempt, and qwen-code 0.2 took it for a
 * rate limit, one `api_error` record of its chat file per attempt, both until the recording
 * client cancelled after 60 s. The recorded agent side is played behind a real `turnguard
 * proxy --fail-fast`; the client sends the recorded lines but never cancels, as a client
 * that waits on the agent. turnguard answers it with the quota its evidence shows, and its
 * `session/cancel` is what lets the recorded agent finish.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { readTranscript } from "../../lib/record/transcript.ts";
import {
  BUN,
  killedAfterEach,
  MAIN,
  readOutcomes,
  scratch,
  startProxy,
} from "../fixtures/acp/harness.ts";
import { CORPUS } from "../agents/replay.ts";

setDefaultTimeout(60_000);
const track = killedAfterEach();

/** Generous smoke bound for "within a few seconds of the first attempt" on a loaded CI box. */
const FEW_SECONDS_MS = 15_000;

const CASES = [
  { agent: "opencode", profile: "opencode", promptId: 2 },
  { agent: "qwen-code", profile: "qwen", promptId: 3 },
];

describe("--fail-fast on a recorded quota the agent retries blindly", () => {
  for (const { agent, profile, promptId } of CASES) {
    test(`${agent}: the client gets quota in seconds, once; the recorded answer after the cancel is dropped`, async () => {
      const path = join(CORPUS, agent, "quota_daily.jsonl");
      const { events } = readTranscript(path);
      const cancelAt = events.findIndex((e) =>
        e.dir === "c2a" && e.line.includes("session/cancel")
      );
      const clientLines = events.slice(0, cancelAt).filter((e) => e.dir === "c2a").map((e) =>
        e.line
      );
      const prompted = clientLines.findIndex((l) => l.includes('"session/prompt"'));
      expect(prompted).toBe(clientLines.length - 1);
      const s = scratch();
      const p = track(startProxy(
        s,
        ["--agent", profile, "--fail-fast", "--no-journal", "--outcome-file", s.outcomes],
        [BUN, MAIN, "replay", "--agent-side", path],
        {
          TURNGUARD_REPLAY_HOME: s.home,
          XDG_DATA_HOME: join(s.home, ".local/share"),
          QWEN_HOME: join(s.home, ".qwen"),
        },
      ));
      let out = "";
      p.child.stdout!.on("data", (c: Uint8Array) => out += new TextDecoder().decode(c));
      const answer = async (id: number) => {
        for (let i = 0; i < 600; i++) {
          const line = out.split("\n").find((l) => l.startsWith(`{"jsonrpc":"2.0","id":${id},`));
          if (line) return JSON.parse(line);
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`no answer to ${id}: ${out}\n${p.stderr()}`);
      };
      for (const [i, line] of clientLines.slice(0, -1).entries()) {
        p.child.stdin!.write(line + "\n");
        await answer(i);
      }
      const asked = Date.now();
      p.child.stdin!.write(clientLines.at(-1) + "\n");
      const reply = await answer(promptId);
      expect(Date.now() - asked).toBeLessThan(FEW_SECONDS_MS);
      expect(reply.error.message).toContain("You exceeded your current quota");
      expect(reply.error.data.turnguard).toMatchObject({ status: "failed", category: "quota" });
      expect(reply.error.data.turnguard.attempts[0]).toMatchObject({ n: 1, category: "quota" });
      // The recorded agent answers end_turn once it got turnguard's cancel: never forwarded.
      await new Promise((r) => setTimeout(r, 1500));
      p.child.stdin!.end();
      await p.exited;
      const answers = out.split("\n").filter((l) =>
        l.startsWith(`{"jsonrpc":"2.0","id":${promptId},`)
      );
      expect(answers.length).toBe(1);
      const [o] = readOutcomes(s.outcomes);
      expect(o).toMatchObject({ status: "failed", error: { category: "quota" } });
      expect(o.endedEarly?.reason).toContain("quota");
    });
  }
});
