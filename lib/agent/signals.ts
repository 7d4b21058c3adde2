/**
 * Signal names and numbers, and the child's process group: the agent runs as the leader
 * of a group of its own (spawned `detached`), so the signals turnguard forwards to it, and
 * its stop on every way out (lib/agent/owner.ts), reach the processes it started too.
 */
import { stdinIsTerminal } from "../io/terminal.ts";

/** The signals a wrapper forwards to the agent it runs. */
export const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const;
/** One of the forwarded signals. */
export type ForwardedSignal = typeof FORWARDED_SIGNALS[number];

/** The number of a signal name (`SIGINT` → 2); 0 when unknown. */
export function signalNumber(name: string): number {
  // Loaded when a signal is named, not at every start (node:os: about 1 ms, 1 MiB).
  const { constants } = process.getBuiltinModule("node:os");
  return (constants.signals as Record<string, number>)[name] ?? 0;
}

/** The shell convention for a process killed by a signal: 128 + N. */
export function signalExitCode(name: string): number {
  return 128 + signalNumber(name);
}

/** A child process signals can be forwarded to (node:child_process's or Bun's). */
export interface Signallable {
  readonly pid?: number;
  readonly exitCode: number | null;
  readonly signalCode: string | null;
  kill(signal: NodeJS.Signals): unknown;
}

/**
 * Whether `run` starts the agent in a process group of its own: yes, unless stdin is a
 * terminal (a new session would cut the agent off it). The proxy's agent always is.
 */
export function ownGroup(): boolean {
  // Not process.stdin: the stream would change the descriptor the agent inherits.
  return !stdinIsTerminal();
}

/**
 * Sends `signal` to the child's process group (it leads one when spawned `detached`), else
 * (no such group: it was not detached, or it is gone) to the child alone. Never throws.
 */
export function killGroup(child: Signallable, signal: NodeJS.Signals): void {
  if (child.pid !== undefined) {
    try {
      process.kill(-child.pid, signal);
      return;
    } catch { /* no such group */ }
  }
  try {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  } catch { /* already gone */ }
}

/** Whether any process of the child's group still exists (zombies count until reaped). */
export function groupAlive(child: Signallable): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, 0);
    return true;
  } catch {
    return false;
  }
}
