/**
 * Signal names and numbers, forwarding of a wrapper's signals to its child, and the
 * child's process group: the agent runs as the leader of a group of its own (spawned
 * `detached`), so its signals, and the stop on every exit path, reach the processes it
 * started too.
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
 * Forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to `child` until the returned function is
 * called. `onSignal` is told of each one (the turn counts as cancelled).
 */
export function forwardSignals(
  child: Signallable,
  onSignal: (signal: ForwardedSignal) => void,
): () => void {
  const handlers = FORWARDED_SIGNALS.map((signal) => {
    const handler = () => {
      onSignal(signal);
      if (child.exitCode === null && child.signalCode === null) killGroup(child, signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}

/**
 * Forwards the signals from before the child exists: installed before it is spawned (a
 * signal that arrives while it starts must not kill turnguard and leave it behind), each
 * one is passed on once `attach` names the child. `stop` removes the handlers.
 */
export function forwardSignalsFromSpawn(
  onSignal: (signal: ForwardedSignal) => void,
): { attach(child: Signallable): void; stop(): void } {
  let target: Signallable | null = null;
  const waiting: ForwardedSignal[] = [];
  const stop = forwardSignals({
    get pid() {
      return target?.pid;
    },
    get exitCode() {
      return target ? target.exitCode : null;
    },
    get signalCode() {
      return target ? target.signalCode : null;
    },
    kill(signal: NodeJS.Signals) {
      if (target) killGroup(target, signal);
    },
  }, (signal) => {
    onSignal(signal);
    if (!target) waiting.push(signal);
  });
  return {
    attach(child) {
      target = child;
      for (const signal of waiting.splice(0)) killGroup(child, signal);
    },
    stop,
  };
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

/**
 * Stops the child's process group on every way out of turnguard: at `process.exit` (an
 * error, the end of main) and when `stop` is called after the agent exited (what it
 * started and left behind goes with it, as under tini). Returns `stop`. SIGKILL of
 * turnguard itself cannot be caught: the group then outlives it (a known limit; the
 * proxy's agent still sees its stdin close).
 */
export function stopGroupOnExit(child: Signallable): () => void {
  const stop = () => killGroup(child, "SIGTERM");
  process.on("exit", stop);
  return () => {
    process.off("exit", stop);
    stop();
  };
}
