/**
 * The agent's descendants, found without privileges wherever they went: the agent's
 * environment carries a token of this turn (AGENT_TOKEN_VAR), every process it starts
 * inherits it, and a process that left the agent's process group (a `setsid` daemon) is
 * still found by scanning `/proc/<pid>/environ` of the processes of turnguard's own user
 * for it — the way Jenkins' ProcessTreeKiller finds what a build left behind
 * (jenkinsci/jenkins, core/src/main/java/hudson/util/ProcessTree.java, `BUILD_ID` cookie).
 * A process that wiped its environment (`env -i`) is not found: a known limit. Without
 * `/proc` (not Linux), nothing is found and only the process group is stopped.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";

/** The variable that marks the agent's environment. */
export const AGENT_TOKEN_VAR = "TURNGUARD_AGENT_TOKEN";

/** A new token for one agent: random, so that no other turn's processes carry it. */
export function newAgentToken(): string {
  return crypto.randomUUID();
}

/** `env` with the agent's token added (the agent and everything it starts inherit it). */
export function markedEnv(
  env: Record<string, string | undefined>,
  token: string,
): Record<string, string | undefined> {
  return { ...env, [AGENT_TOKEN_VAR]: token };
}

/**
 * The pids of the live processes of this user whose environment carries `token` (never
 * turnguard itself). Unreadable entries (gone, another user's, zombies) are skipped.
 */
export function markedProcesses(token: string, procDir = "/proc"): number[] {
  // The token is random: `VAR=token` anywhere in the environment is this agent's mark.
  const needle = Buffer.from(`${AGENT_TOKEN_VAR}=${token}`);
  const uid = process.getuid?.();
  const found: number[] = [];
  for (const pid of processIds(procDir)) {
    if (pid === process.pid) continue;
    try {
      if (uid !== undefined && statSync(`${procDir}/${pid}`).uid !== uid) continue;
      if (readFileSync(`${procDir}/${pid}/environ`).indexOf(needle) !== -1) found.push(pid);
    } catch { /* gone, or not ours to read */ }
  }
  return found;
}

/** Sends `signal` to every process `markedProcesses` finds; returns how many it reached. */
export function signalMarked(token: string, signal: NodeJS.Signals): number {
  let sent = 0;
  for (const pid of markedProcesses(token)) {
    try {
      process.kill(pid, signal);
      sent++;
    } catch { /* gone meanwhile */ }
  }
  return sent;
}

/** The pids listed in `procDir` (/proc); none when it cannot be listed. */
export function processIds(procDir = "/proc"): number[] {
  let entries: string[];
  try {
    entries = readdirSync(procDir);
  } catch {
    return [];
  }
  return entries.map(Number).filter((pid) => Number.isInteger(pid) && pid > 0);
}
