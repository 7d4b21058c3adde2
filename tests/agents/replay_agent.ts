/**
 * The replay agent as a script: plays one corpus transcript back as the agent side of ACP
 * (lib/record/player.ts, what `turnguard replay --agent-side` runs), with each file the agent
 * wrote written under REPLAY_HOME. For drivers that run it behind something else (the chain
 * tests' id-mapping wrapper, tests/fixtures/chain/replay_agent.ts).
 *
 * Usage: replay_agent.ts TRANSCRIPT.jsonl. After the last event it exits 0 when stdin closes.
 */
import { playAgentSide, processPlayerIo } from "../../lib/record/player.ts";
import { readTranscript } from "../../lib/record/transcript.ts";

const path = process.argv[2];
if (!path) {
  process.stderr.write("usage: replay_agent.ts TRANSCRIPT.jsonl\n");
  process.exit(2);
}
await playAgentSide(readTranscript(path), processPlayerIo(), {
  home: process.env.REPLAY_HOME ?? null,
});
process.exit(0);
