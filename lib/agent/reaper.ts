/**
 * turnguard as PID 1 (a container's entry point): orphans are handed to it, and each that
 * exits stays a zombie until it is reaped — the job tini does (krallin/tini, src/tini.c,
 * `reap_zombies`). The runtime reaps only the children it spawned itself, so turnguard
 * looks for zombie children in `/proc` and reaps those the runtime left: a zombie seen on
 * two looks in a row (the runtime had an event-loop turn in between to reap its own).
 */
import { readFileSync } from "node:fs";
import { processIds } from "./descendants.ts";
import { libc } from "../io/libc.ts";

/** How often PID 1 looks for zombies. */
export const REAP_INTERVAL_MS = 500;

/**
 * Starts reaping orphans for the rest of the process's life (the timer never keeps it
 * alive). Resolves false where the C library cannot be reached (then nothing is reaped).
 */
export async function reapOrphans(intervalMs = REAP_INTERVAL_MS): Promise<boolean> {
  const c = await libc();
  if (c === null) return false;
  let seen = new Set<number>();
  const look = () => {
    const zombies = zombieChildren(process.pid);
    for (const pid of zombies) if (seen.has(pid)) c.reap(pid);
    seen = new Set(zombies);
  };
  const timer = setInterval(look, intervalMs);
  (timer as { unref?: () => void }).unref?.();
  return true;
}

/** The pids of `parent`'s children that are zombies, read from `/proc/<pid>/stat`. */
export function zombieChildren(parent: number, procDir = "/proc"): number[] {
  const found: number[] = [];
  for (const pid of processIds(procDir)) {
    let stat: string;
    try {
      stat = readFileSync(`${procDir}/${pid}/stat`, "latin1");
    } catch {
      continue;
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" && Number(fields[1]) === parent) found.push(pid);
  }
  return found;
}
