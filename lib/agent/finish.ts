/**
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT mean "finish now" to a wrapper (`run`, `proxy`), in
 * every state: while its config loads, while the agent starts or runs, after the agent
 * exited while something it left holds its output open, during a retry's wait, while the
 * last bytes go out. main installs the handlers before anything else runs, for the whole
 * life of the process; each part that waits listens (`onFinish`) and cuts its wait short.
 * Two bounds back them: a second signal ends turnguard at once, and so does the finish
 * deadline (FINISH_MARGIN_MS past the grace the agent was given to stop). The `exit` hooks
 * of lib/agent/owner.ts then stop whatever of the agent is left.
 */
import { FORWARDED_SIGNALS, type ForwardedSignal, signalExitCode } from "./signals.ts";

/** After a finish signal, how long turnguard may take past its agent's grace to end. */
export const FINISH_MARGIN_MS = 3000;

let received: ForwardedSignal | null = null;
let installed = false;
const listeners = new Set<(signal: ForwardedSignal) => void>();
/** The graces granted to agents now stopping (the deadline waits out the longest). */
const graces = new Set<{ ms: number }>();

/**
 * Installs the handlers (once per process). Until then a signal keeps its default action,
 * which ends the process (PID 1 excepted: there an unhandled SIGTERM is ignored, so main
 * installs them first thing).
 */
export function installFinishSignals(): void {
  if (installed) return;
  installed = true;
  for (const signal of FORWARDED_SIGNALS) process.on(signal, () => receive(signal));
}

/** The first finish signal turnguard received, or null. */
export function finishSignal(): ForwardedSignal | null {
  return received;
}

/**
 * Calls `listener` at the first finish signal (at once, on a later tick, when one already
 * came). Returns the function that stops listening.
 */
export function onFinish(listener: (signal: ForwardedSignal) => void): () => void {
  if (received !== null) {
    const signal = received;
    let live = true;
    queueMicrotask(() => live && listener(signal));
    return () => void (live = false);
  }
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/** Resolves at the first finish signal; with `stop()`, never (its listener is removed). */
export function whenFinishing(): { signal: Promise<ForwardedSignal>; stop(): void } {
  let stop = () => {};
  const signal = new Promise<ForwardedSignal>((resolve) => (stop = onFinish(resolve)));
  return { signal, stop };
}

/** Grants an agent `ms` to stop after a finish signal; the returned function withdraws it. */
export function grantGrace(ms: number): () => void {
  const grace = { ms };
  graces.add(grace);
  return () => void graces.delete(grace);
}

function receive(signal: ForwardedSignal): void {
  if (received !== null) return exitNow(signal);
  received = signal;
  const grace = Math.max(0, ...[...graces].map((g) => g.ms));
  const deadline = setTimeout(
    () => exitNow(signal),
    Math.min(grace + FINISH_MARGIN_MS, 2 ** 31 - 1),
  );
  // The deadline never keeps turnguard alive by itself.
  (deadline as { unref?: () => void }).unref?.();
  for (const listener of [...listeners]) {
    try {
      listener(signal);
    } catch { /* one listener's failure does not keep the others from finishing */ }
  }
  listeners.clear();
}

/** Ends turnguard now; the `exit` hooks stop what is left of the agent. */
function exitNow(signal: ForwardedSignal): never {
  process.exit(signalExitCode(signal));
}
