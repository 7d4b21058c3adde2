/**
 * Replays corpus transcripts through the compiled `turnguard proxy`: the replay agent plays
 * the agent side, and a client here replays the recorded client lines in order (each after
 * the agent lines recorded before it arrived), so the proxy sees the turn as it happened.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary } from "../helpers/binary.ts";
import { BUN, ROOT } from "../helpers/cli.ts";
import { readTranscript } from "./transcript.ts";
import type { Outcome } from "../../lib/core/outcome.ts";

/** The committed corpus. */
export const CORPUS = join(ROOT, "tests", "agents", "corpus");
const REPLAY = join(ROOT, "tests", "agents", "replay_agent.ts");

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

/** What one replay left: the client's received lines, the Outcome(s), proxy stderr. */
export interface Replayed {
  received: string[];
  outcomes: Outcome[];
  stderr: string;
  code: number | null;
}

/**
 * Replays one transcript through `turnguard proxy` and collects what came out. `profile`:
 * the profile it runs under (default: the agent's built-in one, if any); null: none, so the proxy
 * meets the agent for the first time (the replay agent's command, `bun`, matches no profile)
 * and only the generic path reads the turn.
 */
export async function replay(
  agent: string,
  path: string,
  profile: string | null = PROFILE[agent] ?? null,
): Promise<Replayed> {
  const bin = turnguardBinary();
  const dir = mkdtempSync(join(tmpdir(), "turnguard-corpus-"));
  const home = join(dir, "home");
  mkdirSync(home);
  const outcomes = join(dir, "outcomes.jsonl");
  const { events } = readTranscript(path);
  const child = spawn(
    bin,
    [
      "proxy",
      ...(profile ? ["--agent", profile] : []),
      "--outcome-file",
      outcomes,
      "--",
      BUN,
      REPLAY,
      path,
    ],
    {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_CONFIG_HOME: join(home, ".config"),
        XDG_STATE_HOME: join(home, ".state"),
        REPLAY_HOME: home,
      },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  const received: string[] = [];
  let stderr = "";
  let buf = "";
  let wake: (() => void) | null = null;
  child.stdout!.on("data", (c: Buffer) => {
    buf += c.toString("utf8");
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      received.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    wake?.();
  });
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  const closed = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
  let gone = false;
  void closed.then(() => {
    gone = true;
    wake?.();
  });
  const receivedAtLeast = (n: number) =>
    new Promise<void>((r) => {
      const check = () => (received.length >= n || gone ? r() : (wake = check));
      check();
    });
  let expectA2c = 0;
  for (const e of events) {
    if (e.dir === "a2c") expectA2c++;
    if (e.dir !== "c2a") continue;
    await receivedAtLeast(expectA2c);
    child.stdin!.write(`${e.line}\n`);
  }
  await receivedAtLeast(expectA2c);
  child.stdin!.end();
  const code = await closed;
  const text = existsSync(outcomes) ? readFileSync(outcomes, "utf8") : "";
  return {
    received,
    outcomes: text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Outcome),
    stderr,
    code,
  };
}
