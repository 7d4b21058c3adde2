/**
 * Replays corpus transcripts through the compiled `turnguard proxy`, as `turnguard replay`
 * does: turnguard plays the recorded agent side, and the recorded client lines are fed in
 * order (each after the agent lines recorded before it arrived), so the proxy sees the turn
 * as it happened.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { ROOT } from "../helpers/cli.ts";
import { readTranscript, type Transcript } from "./transcript.ts";
import { type Replayed, replayRecording } from "../../lib/cli/replay.ts";

/** The committed corpus. */
export const CORPUS = join(ROOT, "tests", "agents", "corpus");

/** The built-in profile each corpus agent runs under. */
export const PROFILE: Record<string, string> = {
  "claude-agent-acp": "claude",
  "claude-code-acp": "claude",
  "gemini-cli": "gemini",
  "codex-acp": "codex",
  "qwen-code": "qwen",
  "pi-acp": "pi",
  "opencode": "opencode",
};

let binary: string | null = null;
/** dist/turnguard, built (when stale) once per process, not once per replay. */
export function turnguardBinary(): string {
  return (binary ??= ensureBinary());
}

/** Every transcript of the corpus, as [agent, scenario, path]. */
export function corpusCases(): [string, string, string][] {
  if (!existsSync(CORPUS)) return [];
  return readdirSync(CORPUS).sort().flatMap((agent) =>
    readdirSync(join(CORPUS, agent)).filter((f) => f.endsWith(".jsonl")).sort().map((
      f,
    ): [string, string, string] => [agent, f.slice(0, -".jsonl".length), join(CORPUS, agent, f)])
  );
}

const transcripts = new Map<string, Transcript>();
/** The transcript at `path`, read and checked once per process (a corpus file is read-only). */
export function corpusTranscript(path: string): Transcript {
  let t = transcripts.get(path);
  if (t === undefined) transcripts.set(path, t = readTranscript(path));
  return t;
}

/** What one replay left: the client's received lines, the Outcome(s), proxy stderr. */
export type { Replayed };

/**
 * Replays one transcript through `turnguard proxy` (`turnguard replay`'s driver, with the
 * compiled binary as both the proxy and the agent side) and collects what came out.
 * `profile`: the profile it runs under (default: the agent's built-in one, if any); null:
 * none, so the proxy meets the agent for the first time (the agent side's command,
 * `turnguard`, matches no profile) and only the generic path reads the turn.
 */
export function replay(
  agent: string,
  path: string,
  profile: string | null = PROFILE[agent] ?? null,
): Promise<Replayed> {
  return replayRecording(path, corpusTranscript(path), {
    profile,
    config: null,
    self: [turnguardBinary()],
  });
}
