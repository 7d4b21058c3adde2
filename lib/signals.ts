/** Signal names and numbers, and forwarding of a wrapper's signals to its child. */
import { constants } from "node:os";

/** The signals a wrapper forwards to the agent it runs. */
export const FORWARDED_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const;
/** One of the forwarded signals. */
export type ForwardedSignal = typeof FORWARDED_SIGNALS[number];

/** The number of a signal name (`SIGINT` → 2); 0 when unknown. */
export function signalNumber(name: string): number {
  return (constants.signals as Record<string, number>)[name] ?? 0;
}

/** The shell convention for a process killed by a signal: 128 + N. */
export function signalExitCode(name: string): number {
  return 128 + signalNumber(name);
}

/** A child process signals can be forwarded to (node:child_process's or Bun's). */
export interface Signallable {
  readonly exitCode: number | null;
  readonly signalCode: string | null;
  kill(signal: ForwardedSignal): unknown;
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
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}
